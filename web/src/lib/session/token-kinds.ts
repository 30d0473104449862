/**
 * Which bearer token each operation of the App Services document takes, from its `security`
 * requirements: none, the access token, or the refresh token. The type forces one entry for
 * every operation of the generated paths, and a unit test compares the table with the document.
 */
import type { AppServicesPaths } from "@harness/openapi/app-services";

export type TokenKind = "none" | "access" | "refresh";

/**
 * `login` (and the start of a browser sign-in, `beginOAuthLogin`) takes no token, except with
 * `?link=true`, where it takes the access token of the user.
 */
type TableEntry = TokenKind | "access-when-linking";

type Method = "get" | "put" | "post" | "delete" | "options" | "head" | "patch" | "trace";

type OperationTable = {
  [P in keyof AppServicesPaths]: {
    [M in Method as NonNullable<AppServicesPaths[P][M]> extends never ? never : M]: TableEntry;
  };
};

export const tokenKinds: OperationTable = {
  "/api/client/v2.0/app/{appId}/location": { get: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/{provider}/login": {
    get: "access-when-linking",
    post: "access-when-linking",
  },
  "/api/client/v2.0/auth/callback": { get: "none", post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm/send": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/confirm/call": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset/send": { post: "none" },
  "/api/client/v2.0/app/{appId}/auth/providers/local-userpass/reset/call": { post: "none" },
  "/api/client/v2.0/app/{appId}/functions/call": { get: "access", post: "access" },
  "/api/client/v2.0/auth/profile": { get: "access" },
  "/api/client/v2.0/auth/session": { post: "refresh", delete: "refresh" },
  "/api/client/v2.0/auth/delete": { delete: "access" },
  "/api/client/v2.0/auth/api_keys": { get: "refresh", post: "refresh" },
  "/api/client/v2.0/auth/api_keys/{apiKeyId}": { get: "refresh", delete: "refresh" },
  "/api/client/v2.0/auth/api_keys/{apiKeyId}/enable": { put: "refresh" },
  "/api/client/v2.0/auth/api_keys/{apiKeyId}/disable": { put: "refresh" },
  // The app's Data API and HTTPS endpoints: credentials are their own (a bearer token, or headers), if any.
  "/app/{appId}/endpoint/data/{version}/action/{action}": { post: "none" },
  "/app/{appId}/endpoint/{route}": { get: "none", post: "none", put: "none", patch: "none", delete: "none" },
};

/** The token a request needs; unknown operations get none. */
export function tokenKindOf(method: string, schemaPath: string, url: string): TokenKind {
  const entry = (tokenKinds as Record<string, Record<string, TableEntry> | undefined>)[schemaPath]?.[
    method.toLowerCase()
  ];
  if (entry === undefined) return "none";
  if (entry === "access-when-linking") return new URL(url).searchParams.get("link") === "true" ? "access" : "none";
  return entry;
}
