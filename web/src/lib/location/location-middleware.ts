/**
 * The location lookup decides the base URL, as the official SDK does: the first call asks
 * `GET {configured base}/…/location` and every call after it goes to the reply's `hostname`. The
 * answer is cached for the page's life and forgotten when the lookup fails, so the next call asks again.
 */
import type { MiddlewareCallbackParams } from "openapi-fetch";

export interface LocationMiddlewareOptions {
  /** The base URL the client was created with (no trailing slash). */
  configuredBaseUrl: string;
  /** The schema path of the location operation itself (never rewritten). */
  locationPath: string;
  /** Performs the lookup; resolves with the `hostname` to use. */
  lookup: () => Promise<string>;
}

/** An openapi-fetch middleware that rebases requests on the looked-up host. */
export interface LocationMiddleware {
  /** The base URL every call uses (looked up once). */
  baseUrl(): Promise<string>;
  onRequest(params: MiddlewareCallbackParams): Promise<Request | undefined>;
}

async function rebase(request: Request, url: string): Promise<Request> {
  // A Request cannot change its URL; copy it. The body is read whole (a streamed body would need
  // `duplex: "half"`, and these bodies are small JSON documents).
  const body = request.method === "GET" || request.method === "HEAD" ? undefined : await request.arrayBuffer();
  return new Request(url, {
    method: request.method,
    headers: request.headers,
    body: body && body.byteLength > 0 ? body : undefined,
    signal: request.signal,
    redirect: request.redirect,
    credentials: request.credentials,
  });
}

export function createLocationMiddleware({
  configuredBaseUrl,
  locationPath,
  lookup,
}: LocationMiddlewareOptions): LocationMiddleware {
  let cached: Promise<string> | null = null;

  function baseUrl(): Promise<string> {
    cached ??= lookup().then(
      (hostname) => hostname.replace(/\/+$/, ""),
      (error: unknown) => {
        cached = null;
        throw error;
      },
    );
    return cached;
  }

  return {
    baseUrl,
    async onRequest({ request, schemaPath }) {
      if (schemaPath === locationPath) return undefined;
      const base = await baseUrl();
      if (base === configuredBaseUrl || !request.url.startsWith(configuredBaseUrl)) return undefined;
      return rebase(request, base + request.url.slice(configuredBaseUrl.length));
    },
  };
}
