/**
 * Request ids, for following one request through the proxy's, the server's and the client's view:
 * each request's id is in its log lines (`reqId`) and in the reply's `X-Request-Id`. A trusted
 * proxy's id (nginx's `$request_id`, a load balancer's) is taken as it is, so one id names the
 * request everywhere; from anyone else the header is ignored, and a random UUID is made.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { trustedPeer } from "./trusted-peer.ts";

/** Ids that are safe in headers, log lines and links: 1 to 128 visible characters, no spaces. */
const acceptable = /^[A-Za-z0-9._~:+=@-]{1,128}$/;

/** Fastify's `genReqId`: the trusted proxy's id, else a new one. */
export function requestIdGenerator(trust: boolean | number | string[]): (request: IncomingMessage) => string {
  const trusted = trustedPeer(trust);
  return (request) => {
    const given = request.headers["x-request-id"];
    if (typeof given === "string" && acceptable.test(given) && trusted(request.socket.remoteAddress)) return given;
    return randomUUID();
  };
}
