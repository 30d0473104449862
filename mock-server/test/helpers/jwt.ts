import { createHmac } from "node:crypto";

/** A JWT signed with HS256 and `key` (a custom token, an endpoint's JWT): its payload as given. */
export function hs256(payload: object, key: string): string {
  const head = Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url");
  const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
  return `${head}.${body}.${createHmac("sha256", key).update(`${head}.${body}`).digest("base64url")}`;
}
