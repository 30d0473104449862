/**
 * Where an OAuth 2.0 provider's endpoints are, and how they are called: the real providers
 * (Google's and Apple's OpenID Connect discovery documents and key sets, Facebook's dialog and
 * Graph API), another fake identity provider reached over HTTP (`--identity-provider URL`, the
 * production rehearsal), or the harness's built-in one called in process (builtin-endpoints.ts).
 * Either way the same code checks what comes back (authenticate.ts): only the transport differs.
 */
import { createRemoteJWKSet, type JWTVerifyGetKey } from "jose";
import type { OAuth2ProviderName } from "../config/app-config.ts";
import type { AppRuntime } from "../runtime/app-runtime.ts";

/** A provider endpoint's answer: the HTTP status and the parsed JSON body (or the text). */
export interface EndpointReply {
  status: number;
  body: unknown;
}

export interface OidcEndpoints {
  kind: "oidc";
  /** The issuer of its discovery document (also the audience of Apple's client-secret JWTs). */
  issuer: string;
  /** The `iss` values its ID tokens may carry (Google's also come without `https://`). */
  acceptedIssuers: string[];
  authorizationEndpoint: string;
  /** Whether it takes PKCE (S256), from its discovery document. */
  pkce: boolean;
  algorithms: string[];
  keys: JWTVerifyGetKey;
  token(form: Record<string, string>): Promise<EndpointReply>;
}

export interface GraphEndpoints {
  kind: "graph";
  authorizationEndpoint: string;
  accessToken(query: Record<string, string>): Promise<EndpointReply>;
  debugToken(query: Record<string, string>): Promise<EndpointReply>;
  me(query: Record<string, string>): Promise<EndpointReply>;
}

export type ProviderEndpoints = OidcEndpoints | GraphEndpoints;

/** The provider could not be reached, or answered what no provider would (logged, never shown). */
export class ProviderUnreachableError extends Error {}

export interface EndpointContext {
  app: AppRuntime;
  /** The origin the browser reached this server at (where the built-in provider's pages are). */
  origin: string;
}

export interface EndpointSource {
  endpoints(provider: OAuth2ProviderName, context: EndpointContext): Promise<ProviderEndpoints>;
}

export const realEndpoints = {
  google: "https://accounts.google.com/.well-known/openid-configuration",
  apple: "https://appleid.apple.com/.well-known/openid-configuration",
  facebookGraph: "https://graph.facebook.com/v19.0",
  facebookDialog: "https://www.facebook.com/v19.0/dialog/oauth",
} as const;

const timeoutMs = 10_000;
const discoveryTtlMs = 60 * 60 * 1000;

async function call(url: string, init: RequestInit = {}): Promise<EndpointReply> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs), redirect: "error" });
  } catch (error) {
    throw new ProviderUnreachableError(`${new URL(url).origin}: ${(error as Error).message}`);
  }
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, body };
}

const withQuery = (url: string, query: Record<string, string>) => `${url}?${new URLSearchParams(query)}`;

interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  code_challenge_methods_supported?: string[];
  id_token_signing_alg_values_supported?: string[];
}

function isDiscovery(body: unknown): body is Discovery {
  const d = body as Record<string, unknown> | null;
  return (
    d !== null &&
    typeof d === "object" &&
    ["issuer", "authorization_endpoint", "token_endpoint", "jwks_uri"].every((k) => typeof d[k] === "string")
  );
}

/** Only asymmetric signatures: a provider's ID token is never HMAC-signed or unsigned. */
const asymmetric = /^(RS|PS|ES)(256|384|512)$|^EdDSA$/;

/** Endpoints found through discovery documents and base URLs, fetched over HTTP (cached). */
export class RemoteEndpoints implements EndpointSource {
  private readonly discoveries = new Map<string, { at: number; value: Promise<OidcEndpoints> }>();
  private readonly keySets = new Map<string, JWTVerifyGetKey>();

  /** `real`: Google, Apple and Facebook; else the base URL of a fake identity provider. */
  constructor(private readonly base: "real" | string) {}

  endpoints(provider: OAuth2ProviderName): Promise<ProviderEndpoints> {
    if (provider === "oauth2-facebook") return Promise.resolve(this.graph());
    const url =
      this.base === "real"
        ? provider === "oauth2-google"
          ? realEndpoints.google
          : realEndpoints.apple
        : `${this.base}/${provider}/.well-known/openid-configuration`;
    return this.discover(url, provider);
  }

  private graph(): GraphEndpoints {
    const graph = this.base === "real" ? realEndpoints.facebookGraph : `${this.base}/oauth2-facebook`;
    const dialog = this.base === "real" ? realEndpoints.facebookDialog : `${this.base}/oauth2-facebook/authorize`;
    return {
      kind: "graph",
      authorizationEndpoint: dialog,
      accessToken: (query) => call(withQuery(`${graph}/oauth/access_token`, query)),
      debugToken: (query) => call(withQuery(`${graph}/debug_token`, query)),
      me: (query) => call(withQuery(`${graph}/me`, query)),
    };
  }

  private discover(url: string, provider: OAuth2ProviderName): Promise<OidcEndpoints> {
    const cached = this.discoveries.get(url);
    if (cached && Date.now() - cached.at < discoveryTtlMs) return cached.value;
    const value = this.load(url, provider);
    this.discoveries.set(url, { at: Date.now(), value });
    // A failure is not kept: the next sign-in asks again.
    value.catch(() => this.discoveries.delete(url));
    return value;
  }

  private async load(url: string, provider: OAuth2ProviderName): Promise<OidcEndpoints> {
    const reply = await call(url, { headers: { accept: "application/json" } });
    if (reply.status !== 200 || !isDiscovery(reply.body))
      throw new ProviderUnreachableError(`${url} answered ${reply.status} without a discovery document`);
    const discovery = reply.body;
    // OpenID Connect Discovery §4.3: the document's issuer is the URL it was found under.
    if (`${discovery.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration` !== url)
      throw new ProviderUnreachableError(`${url} names another issuer (${discovery.issuer})`);
    let keys = this.keySets.get(discovery.jwks_uri);
    if (!keys) {
      keys = createRemoteJWKSet(new URL(discovery.jwks_uri), { timeoutDuration: timeoutMs });
      this.keySets.set(discovery.jwks_uri, keys);
    }
    const algorithms = (discovery.id_token_signing_alg_values_supported ?? ["RS256"]).filter((a) => asymmetric.test(a));
    const acceptedIssuers = [discovery.issuer];
    // Google: "The value of iss in the ID token is equal to accounts.google.com or https://accounts.google.com."
    if (provider === "oauth2-google" && discovery.issuer.startsWith("https://"))
      acceptedIssuers.push(discovery.issuer.slice("https://".length));
    return {
      kind: "oidc",
      issuer: discovery.issuer,
      acceptedIssuers,
      authorizationEndpoint: discovery.authorization_endpoint,
      pkce: discovery.code_challenge_methods_supported?.includes("S256") ?? false,
      algorithms: algorithms.length > 0 ? algorithms : ["RS256"],
      keys,
      token: (form) =>
        call(discovery.token_endpoint, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
          body: new URLSearchParams(form).toString(),
        }),
    };
  }
}
