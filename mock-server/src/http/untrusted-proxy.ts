/**
 * A request that came through a proxy the server does not trust (`--trust-proxy`): its
 * `X-Forwarded-For` (or `Forwarded`) is ignored, so every client behind that proxy has the proxy's
 * address — in the request logs and in every per-address limit (connections, anonymous users a
 * day, streams, the abuse limits). The server says so in its log, once per proxy address, naming
 * the option that makes it trusted: a deployment behind a proxy that forgot it sees why at once,
 * not when its users start sharing one address's limits.
 */
import type { FastifyInstance } from "fastify";

/** Proxy addresses warned about, at most (past it, the log has said enough). */
const maxWarned = 64;

export function warnOfUntrustedProxies(app: FastifyInstance, trusted: (address: string | undefined) => boolean): void {
  // (Trusting every peer, or the nearest hop: every proxy is trusted.)
  if (trusted(undefined) && trusted("::")) return;
  const warned = new Set<string>();
  app.addHook("onRequest", (request, _reply, done) => {
    const { headers } = request;
    if (headers["x-forwarded-for"] === undefined && headers.forwarded === undefined) return done();
    const peer = request.socket.remoteAddress;
    if (peer === undefined || trusted(peer) || warned.size >= maxWarned) return done();
    const proxy = peer.startsWith("::ffff:") ? peer.slice("::ffff:".length) : peer;
    if (warned.has(proxy)) return done();
    warned.add(proxy);
    app.log.warn(
      { proxy },
      `requests come through a proxy this server does not trust (${proxy}): its X-Forwarded-For is ignored, and every client behind it shares its address in the logs and the per-address limits; trust it with --trust-proxy ${proxy} (or a hop count: docs/production.md)`,
    );
    done();
  });
}
