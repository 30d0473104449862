/**
 * Bearer tokens and the refresh-on-401 policy of the official SDK, as openapi-fetch middleware:
 *
 * - each operation gets the token its `security` names (none, access or refresh);
 * - a call that needs the access token while none is in memory (after a reload) refreshes first;
 * - a 401 with `error_code: InvalidSession` (or `error: "unauthorized"`) on an access-token call
 *   refreshes the access token — one refresh shared by every request that asks meanwhile — and
 *   sends the request once more; a second 401 is returned as it is;
 * - a refresh the service refuses (401), or such a 401 on any refresh-token call, signs out.
 */
import type { MiddlewareCallbackParams } from "openapi-fetch";
import { AppServicesRequestError, isInvalidSessionBody } from "../errors/service-errors.ts";
import type { SessionStore } from "./session-store.ts";
import type { TokenKind } from "./token-kinds.ts";

export interface SessionMiddlewareOptions {
  store: SessionStore;
  tokenKindOf: (method: string, schemaPath: string, url: string) => TokenKind;
  /** Asks the service for a new access token; rejects with `AppServicesRequestError` when refused. */
  refreshAccessToken: () => Promise<string>;
}

/** An openapi-fetch middleware, plus the refresh itself for callers that need a new access token. */
export interface SessionMiddleware {
  /** A new access token (single-flight); null when the session is over. */
  refresh(): Promise<string | null>;
  onRequest(params: MiddlewareCallbackParams): Promise<Request | undefined>;
  onResponse(params: MiddlewareCallbackParams & { response: Response }): Promise<Response | undefined>;
  onError(params: MiddlewareCallbackParams & { error: unknown }): undefined;
}

interface Pending {
  kind: TokenKind;
  token: string | null;
  /** An unsent copy, for the one retry. */
  retry: Request | null;
}

export function createSessionMiddleware({
  store,
  tokenKindOf,
  refreshAccessToken,
}: SessionMiddlewareOptions): SessionMiddleware {
  const pending = new Map<string, Pending>();
  let inflight: Promise<string | null> | null = null;

  function refresh(): Promise<string | null> {
    if (inflight) return inflight;
    const refreshToken = store.getRefreshToken();
    if (!refreshToken) return Promise.resolve(null);
    inflight = refreshAccessToken()
      .then(
        (token) => {
          // A sign-out or another sign-in meanwhile makes this token stale.
          if (store.getRefreshToken() !== refreshToken) return store.getAccessToken();
          store.setAccessToken(token);
          return token;
        },
        (error: unknown) => {
          if (error instanceof AppServicesRequestError && error.status === 401) {
            if (store.getRefreshToken() === refreshToken) store.signOut("expired");
            return null;
          }
          // Offline or a server error: the session may still be good, so keep it and report the failure.
          throw error;
        },
      )
      .finally(() => {
        inflight = null;
      });
    return inflight;
  }

  return {
    refresh,

    async onRequest({ request, schemaPath, id }) {
      const kind = tokenKindOf(request.method, schemaPath, request.url);
      if (kind === "none") return undefined;
      let token: string | null;
      if (kind === "refresh") {
        token = store.getRefreshToken();
      } else {
        token = store.getAccessToken();
        if (token === null && store.getRefreshToken() !== null) token = await refresh();
      }
      if (token !== null) request.headers.set("Authorization", `Bearer ${token}`);
      pending.set(id, { kind, token, retry: kind === "access" ? request.clone() : null });
      return request;
    },

    async onResponse({ response, id, options }) {
      const meta = pending.get(id);
      pending.delete(id);
      if (!meta || response.status !== 401) return undefined;
      const body: unknown = await response
        .clone()
        .json()
        .catch(() => null);
      if (!isInvalidSessionBody(body)) return undefined;

      if (meta.kind === "refresh") {
        if (meta.token !== null && store.getRefreshToken() === meta.token) store.signOut("expired");
        return undefined;
      }

      // Another request may have refreshed already while this one was out: use its token.
      const current = store.getAccessToken();
      const token = current !== null && current !== meta.token ? current : await refresh();
      if (token === null || meta.retry === null) return undefined;
      const retry = meta.retry;
      retry.headers.set("Authorization", `Bearer ${token}`);
      // Called as a plain function: a browser's fetch refuses to run with another object as `this`.
      const send = options.fetch;
      return send(retry);
    },

    onError({ id }) {
      pending.delete(id);
      return undefined;
    },
  };
}
