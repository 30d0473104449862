/** The database URL as node-postgres is given it (no import of the client: the start checks it too). */

/**
 * The URL as node-postgres is given it. Its `sslmode` `prefer`, `require` and `verify-ca` verify
 * the server's certificate and name, as `verify-full` does: node-postgres 8's reading, which its
 * next major version gives up for libpq's (where `require` encrypts without checking whom it talks
 * to). Written `verify-full` here, an upgrade cannot weaken it, and node-postgres does not warn
 * about the change at every start. `uselibpqcompat=true` in the URL asks for libpq's meanings and
 * is left as it is. docs/decisions/0058-database-tls.md.
 */
export function connectionUrl(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return url;
  let query = url.slice(at + 1);
  // libpq's `sslrootcert=system`: the platform's trusted authorities, and `verify-full` whatever
  // the mode says. node-postgres would read a file named "system"; its default authorities are
  // the public ones.
  if (/(?:^|&)sslrootcert=system(?:&|$)/.test(query)) {
    const rest = query.split("&").filter((part) => part !== "sslrootcert=system" && !part.startsWith("sslmode="));
    query = [...rest, "sslmode=verify-full"].join("&");
  }
  if (/(?:^|&)uselibpqcompat=true(?:&|$)/.test(query)) return `${url.slice(0, at + 1)}${query}`;
  return `${url.slice(0, at + 1)}${query.replace(/(^|&)sslmode=(?:prefer|require|verify-ca)(?=&|$)/g, "$1sslmode=verify-full")}`;
}
