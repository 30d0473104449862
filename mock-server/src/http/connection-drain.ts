/**
 * Connections closed between requests, not under them.
 *
 * A proxy in front keeps connections to the server open and sends request after request on them
 * (nginx's upstream `keepalive`): a request it sends on a connection the server is closing at that
 * moment is lost, and one whose method is not idempotent (a login, a function call: POSTs) is not
 * sent to another instance — its client gets a 502. Closing every idle connection at once when a
 * shutdown begins (Node's `server.close()` does) made each rolling restart cost the POSTs that met
 * it: 14 of ~7,000 in six restarts under 20 clients through nginx. So while the server drains:
 *
 * - every reply says `Connection: close`: its connection closes once the reply is out, and the
 *   proxy, told so, sends nothing more on it;
 * - a proxy's connection (one from a peer `--trust-proxy` trusts, as a proxy in front should be)
 *   that is idle closes once it has been idle for the grace time: nginx sends on the connection it
 *   freed last, so the one idle longest is the one it is least likely to be sending on as it
 *   closes; one that never carried a request closes after the grace time from its opening (a
 *   proxy's request follows its connection at once);
 * - another client's idle connection closes at once, as before: browsers and Node's fetch send a
 *   request again that met a kept connection's close, and a test's or a developer's emulator stops
 *   without waiting for the grace;
 * - requests in flight finish (the drain's end cuts what is left: server.ts).
 *
 * Outside a drain (an `app.close()` alone, the tests'), connections that never carried a request
 * close at once: Node's server counts such a connection as busy (closeIdleConnections leaves it),
 * and Node's fetch (undici), for one, opens a spare connection ahead of need and sends nothing on
 * it — closing waited for the client to drop it.
 */

import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

interface Tracked {
  /** Whether its peer is a proxy the server trusts (its idle connection gets the grace time). */
  proxy: boolean;
  /** Requests on it not answered yet. */
  busy: number;
  /** Whether it carried a request. */
  used: boolean;
  /** When it was opened, or its last reply ended. */
  since: number;
}

export class ConnectionDrain {
  private readonly sockets = new Map<Socket, Tracked>();
  private draining = false;
  private sweep: NodeJS.Timeout | null = null;

  /** `proxy`: whether a peer's address is a proxy's (`--trust-proxy`: http/trusted-peer.ts). */
  constructor(
    private readonly app: FastifyInstance,
    private readonly proxy: (address: string | undefined) => boolean,
  ) {
    // Requests carry the TLS socket on HTTPS: track those, not the TCP sockets beneath them.
    const event = "setSecureContext" in app.server ? "secureConnection" : "connection";
    app.server.on(event, (socket: Socket) => {
      this.sockets.set(socket, { proxy: this.proxy(socket.remoteAddress), busy: 0, used: false, since: Date.now() });
      socket.once("close", () => this.sockets.delete(socket));
    });
    app.server.on("request", (request: { socket: Socket }, response: ServerResponse) => {
      const tracked = this.sockets.get(request.socket);
      if (!tracked) return;
      tracked.busy += 1;
      tracked.used = true;
      if (this.draining && !response.headersSent) response.setHeader("connection", "close");
      response.once("close", () => {
        tracked.busy -= 1;
        tracked.since = Date.now();
      });
    });
    app.addHook("preClose", async () => {
      if (this.draining) return;
      for (const [socket, tracked] of this.sockets) if (!tracked.used) socket.destroy();
    });
  }

  /**
   * Begins the drain, before the server stops listening: proxies' idle connections close after
   * `graceMs` of idleness, others' at once (Node's and Fastify's closing of every idle connection
   * at once is held off), and replies close theirs. Answers a function that ends the watch.
   */
  start(graceMs: number): () => void {
    this.draining = true;
    const server = this.app.server;
    // (server.close() and Fastify's close call it: idle connections then go as they come due.)
    server.closeIdleConnections = () => this.closeIdle(graceMs);
    this.sweep = setInterval(() => this.closeIdle(graceMs), Math.max(5, Math.min(25, graceMs / 4)));
    this.sweep.unref();
    return () => {
      if (this.sweep) clearInterval(this.sweep);
      this.sweep = null;
    };
  }

  private closeIdle(graceMs: number): void {
    const now = Date.now();
    for (const [socket, tracked] of this.sockets) {
      if (tracked.busy === 0 && (!tracked.proxy || now - tracked.since >= graceMs)) socket.destroy();
    }
  }
}
