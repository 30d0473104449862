/**
 * A header name as Go writes it (`content-type` → `Content-Type`): as App Services, written in Go,
 * named headers to functions (`context.request.requestHeaders`, `context.http` responses).
 */
export const canonicalHeaderName = (name: string): string =>
  name
    .toLowerCase()
    .split("-")
    .map((part) => (part ? part[0]!.toUpperCase() + part.slice(1) : part))
    .join("-");
