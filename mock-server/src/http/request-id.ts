/**
 * Request ids, for following one request through the proxy's, the server's and the client's view:
 * each request's id is in its log lines (`reqId`) and in the reply's `X-Request-Id`. A trusted
 * proxy's id (nginx's `$request_id`, a load balancer's) is taken as it is, so one id names the
 * request everywhere; from anyone else the header is ignored, and a random UUID is made.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { BlockList, isIPv4 } from "node:net";

/** Ids that are safe in headers, log lines and links: 1 to 128 visible characters, no spaces. */
const acceptable = /^[A-Za-z0-9._~:+=@-]{1,128}$/;

/** Whether the direct peer is a trusted proxy, by the `--trust-proxy` setting (true, a hop count, addresses/CIDRs). */
function trustedPeer(trust: boolean | number | string[]): (address: string | undefined) => boolean {
  if (typeof trust === "boolean") return () => trust;
  // A hop count N trusts the N nearest hops: the direct peer is the first.
  if (typeof trust === "number") return () => trust > 0;
  const list = new BlockList();
  for (const entry of trust) {
    const [address = "", bits] = entry.split("/");
    const type = isIPv4(address) ? "ipv4" : "ipv6";
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return (address) => {
    if (!address) return false;
    const v4 = address.startsWith("::ffff:") ? address.slice("::ffff:".length) : address;
    return isIPv4(v4) ? list.check(v4, "ipv4") : list.check(address, "ipv6");
  };
}

/** Fastify's `genReqId`: the trusted proxy's id, else a new one. */
export function requestIdGenerator(trust: boolean | number | string[]): (request: IncomingMessage) => string {
  const trusted = trustedPeer(trust);
  return (request) => {
    const given = request.headers["x-request-id"];
    if (typeof given === "string" && acceptable.test(given) && trusted(request.socket.remoteAddress)) return given;
    return randomUUID();
  };
}
