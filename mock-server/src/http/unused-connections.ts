/**
 * Closing must not wait for connections that never carried a request. Node's fetch (undici), for
 * one, opens a spare connection ahead of need (after a stream it was reading is aborted) and sends
 * nothing on it; Node's server counts such a connection as busy — closeIdleConnections() leaves it
 * — so a shutdown waited for the client to drop it (its keep-alive timeout, or the drain time).
 */

import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

export function closeUnusedConnectionsOnClose(app: FastifyInstance): void {
  const unused = new Set<Socket>();
  // Requests carry the TLS socket on HTTPS: track those, not the TCP sockets beneath them.
  const event = "setSecureContext" in app.server ? "secureConnection" : "connection";
  app.server.on(event, (socket: Socket) => {
    unused.add(socket);
    socket.once("close", () => unused.delete(socket));
  });
  app.server.on("request", (request: { socket: Socket }) => unused.delete(request.socket));
  app.addHook("preClose", async () => {
    for (const socket of unused) socket.destroy();
  });
}
