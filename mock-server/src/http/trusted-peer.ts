/**
 * Whether a connection's direct peer is a proxy `--trust-proxy` trusts (`true`, a hop count, or
 * addresses and CIDRs), as Fastify reads the setting for the nearest hop: its request ids are
 * taken (request-id.ts) and its address is not capped (connection-cap.ts).
 */
import { BlockList, isIPv4 } from "node:net";

export function trustedPeer(trust: boolean | number | string[]): (address: string | undefined) => boolean {
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
