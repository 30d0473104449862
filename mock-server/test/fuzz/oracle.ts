/**
 * What every fuzzed reply must be: never a 5xx; for a request that reached an operation, a status
 * its document lists, with the content type and body schema documented for that status (the rules
 * of test/helpers/contract.ts); for a request no operation matches, the area's 404 in its error shape.
 */
import { areaOfUrl } from "../../src/http/areas.ts";
import { clip, type Reply } from "../helpers/contract-rules.ts";

export { contractProblem, type Reply } from "../helpers/contract-rules.ts";

/** A request no operation matches: the 404 of the area the URL belongs to, in that area's shape. */
export function unmatchedProblem(url: string, reply: Reply): string | null {
  if (reply.status >= 500) return `unmatched ${url} answered ${reply.status}: ${clip(reply.body)}`;
  if (reply.status !== 404) return `unmatched ${url} answered ${reply.status}, not 404: ${clip(reply.body)}`;
  const type = String(reply.headers["content-type"] ?? "");
  const area = areaOfUrl(url);
  if (area === "emailjs") return type.startsWith("text/plain") ? null : `unmatched ${url}: EmailJS 404 as ${type}`;
  let body: { error?: unknown; error_code?: unknown; code?: unknown };
  try {
    body = JSON.parse(reply.body);
  } catch {
    return `unmatched ${url}: 404 body is not JSON: ${clip(reply.body)}`;
  }
  if (typeof body.error !== "string") return `unmatched ${url}: 404 without an error message: ${clip(reply.body)}`;
  if (area === "control" && body.code !== "NotFound") return `unmatched ${url}: control 404 without code NotFound`;
  if (area !== "control" && type !== "application/json") return `unmatched ${url}: 404 as ${type}`;
  return null;
}
