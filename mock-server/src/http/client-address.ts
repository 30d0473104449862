/**
 * Whose requests count together for the per-address limits (connections, anonymous users a day,
 * change streams, large bodies, the abuse limits): an IPv4 address, or an IPv6 address's /64. One
 * host commonly has a whole /64 to send from (SLAAC, privacy addresses, a delegated prefix), and
 * choosing a new address in it for every request is one line of code: limits keyed on single IPv6
 * addresses would hold nobody (docs/decisions/0018-fair-shares.md).
 */

/** The key of a client address: itself for IPv4 (and IPv4-mapped IPv6), else its /64. */
export function addressKey(address: string): string {
  const bare = address.split("%")[0]!;
  if (!bare.includes(":") || bare.toLowerCase().startsWith("::ffff:")) return bare;
  const [head = "", tail] = bare.split("::");
  // (An IPv4 tail, as in 64:ff9b::192.0.2.1, is the last two groups.)
  const groups = (part: string) =>
    part === "" ? [] : part.split(":").flatMap((group) => (group.includes(".") ? ["0", "0"] : [group]));
  const first = groups(head);
  const last = tail === undefined ? [] : groups(tail);
  const all = [...first, ...Array<string>(Math.max(0, 8 - first.length - last.length)).fill("0"), ...last];
  return `${all
    .slice(0, 4)
    .map((group) => (Number.parseInt(group, 16) || 0).toString(16))
    .join(":")}::/64`;
}
