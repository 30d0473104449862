/**
 * One tenant of the fake identity provider (in the emulator: one app): its accounts, the
 * authorization codes and access tokens it issued, and its answers to the protocol requests —
 * the OpenID Connect token endpoint (Google, Apple), Facebook's code exchange, `debug_token` and
 * `/me` — as status and JSON body, so the HTTP routes and the emulator's in-process use of the
 * built-in provider share every check. Codes and tokens live in this process only (a harness
 * feature); they are bounded, the oldest going first.
 */
import { createHash, createPublicKey, randomBytes } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import type { OAuth2ProviderName } from "../config/app-config.ts";
import { type IdpKeys, idTokenAlgorithm } from "./keys.ts";
import { normalizeAccountEmail, subjectOf, subjectsOf } from "./subjects.ts";

/** A client (relying party) the provider knows: the app's provider settings, or `cli.js idp --client`. */
export interface IdpClient {
  clientId: string;
  /** Google and Facebook: the secret. Apple: a client-secret JWT, or the PEM key its JWTs are signed with. */
  clientSecret?: string | undefined;
  /** Apple: the team id, the `iss` of client-secret JWTs. */
  teamId?: string | undefined;
}

export interface TenantContext {
  /** Milliseconds since the epoch (the app's clock in the emulator). */
  now(): number;
  client(provider: OAuth2ProviderName): IdpClient | undefined;
}

export interface IdpAccount {
  email: string;
  name: string;
  picture?: string;
  createdAt: number;
}

export interface JsonReply {
  status: number;
  body: unknown;
}

/** What the authorization endpoint does with a request: show the picker, answer, or refuse. */
export type AuthorizeOutcome =
  | { kind: "redirect"; location: string }
  | { kind: "form-post"; action: string; fields: Record<string, string> }
  | { kind: "error"; reply: JsonReply };

interface CodeGrant {
  provider: OAuth2ProviderName;
  email: string;
  clientId: string;
  redirectUri: string;
  nonce: string | undefined;
  codeChallenge: string | undefined;
  scope: string;
  expiresAt: number;
}

interface AccessGrant {
  provider: OAuth2ProviderName;
  email: string;
  clientId: string;
  issuedAt: number;
  expiresAt: number;
}

export const codeLifetimeMs = 10 * 60 * 1000;
export const defaultTokenLifetimeSeconds = 3600;
const maxRecords = 10_000;

export const oauthError = (status: number, error: string, description: string): JsonReply => ({
  status,
  body: { error, error_description: description },
});

export const graphError = (message: string, code = 190): JsonReply => ({
  status: 400,
  body: { error: { message, type: "OAuthException", code } },
});

function remember<K, V>(map: Map<K, V>, key: K, value: V): void {
  if (map.size >= maxRecords) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

const randomToken = (bytes = 24) => randomBytes(bytes).toString("base64url");

function splitName(name: string): { given: string; family: string } {
  const [given = name, ...rest] = name.trim().split(/\s+/);
  return { given, family: rest.join(" ") };
}

/** The parameters of an authorization request (query of GET, fields of the picker's POST). */
export type AuthorizationParams = Partial<
  Record<
    | "client_id"
    | "redirect_uri"
    | "response_type"
    | "response_mode"
    | "scope"
    | "state"
    | "nonce"
    | "code_challenge"
    | "code_challenge_method",
    string
  >
>;

export const authorizationParamNames = [
  "client_id",
  "redirect_uri",
  "response_type",
  "response_mode",
  "scope",
  "state",
  "nonce",
  "code_challenge",
  "code_challenge_method",
] as const;

export class IdpTenant {
  private readonly accountsByEmail = new Map<string, IdpAccount>();
  /** Apple sends the user's name once per client: the clients each account has authorized. */
  private readonly authorized = new Set<string>();
  private readonly codes = new Map<string, CodeGrant>();
  private readonly accessTokens = new Map<string, AccessGrant>();

  constructor(
    readonly name: string,
    private readonly keys: IdpKeys,
    private context: TenantContext,
  ) {}

  /** The emulator hands each request the app's current settings and clock. */
  setContext(context: TenantContext): this {
    this.context = context;
    return this;
  }

  now(): number {
    return this.context.now();
  }

  /** The client registered for a provider. */
  client(provider: OAuth2ProviderName): IdpClient | undefined {
    return this.context.client(provider);
  }

  subject(provider: OAuth2ProviderName, account: IdpAccount): string {
    return subjectOf(provider, account.email);
  }

  /** When a code issued now expires. */
  codeExpiry(): number {
    return this.now() + codeLifetimeMs;
  }

  accounts(): IdpAccount[] {
    return [...this.accountsByEmail.values()];
  }

  account(email: string): IdpAccount | undefined {
    return this.accountsByEmail.get(normalizeAccountEmail(email));
  }

  /** Adds an account, or gives the one with this address the name (and picture) given. */
  upsertAccount(input: { email: string; name?: string | undefined; picture?: string | undefined }): {
    account: IdpAccount;
    created: boolean;
  } {
    const email = normalizeAccountEmail(input.email);
    const existing = this.accountsByEmail.get(email);
    const name = input.name?.trim() || existing?.name || email.split("@")[0] || email;
    const account: IdpAccount = {
      email,
      name,
      createdAt: existing?.createdAt ?? this.now(),
      ...(input.picture !== undefined
        ? { picture: input.picture }
        : existing?.picture !== undefined
          ? { picture: existing.picture }
          : {}),
    };
    if (!existing) remember(this.accountsByEmail, email, account);
    else this.accountsByEmail.set(email, account);
    return { account, created: !existing };
  }

  accountView(account: IdpAccount) {
    return {
      email: account.email,
      name: account.name,
      ...(account.picture !== undefined ? { picture: account.picture } : {}),
      subjects: subjectsOf(account.email),
      createdAt: new Date(account.createdAt).toISOString(),
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Tokens

  async idToken(options: {
    provider: OAuth2ProviderName;
    account: IdpAccount;
    issuer: string;
    audience: string;
    nonce?: string | undefined;
    lifetimeSeconds?: number | undefined;
    signedBy?: "provider" | "stranger" | undefined;
  }): Promise<{ token: string; sub: string; expiresAt: number }> {
    const { provider, account } = options;
    const sub = subjectOf(provider, account.email);
    const iat = Math.floor(this.now() / 1000);
    const exp = iat + (options.lifetimeSeconds ?? defaultTokenLifetimeSeconds);
    const names = splitName(account.name);
    const claims: Record<string, unknown> =
      provider === "oauth2-apple"
        ? // Apple's ID tokens carry no name, and booleans as strings.
          { email: account.email, email_verified: "true", is_private_email: "false", auth_time: iat }
        : {
            azp: options.audience,
            email: account.email,
            email_verified: true,
            name: account.name,
            given_name: names.given,
            ...(names.family ? { family_name: names.family } : {}),
            ...(account.picture !== undefined ? { picture: account.picture } : {}),
          };
    if (options.nonce !== undefined) claims.nonce = options.nonce;
    const key = await this.keys.key(options.signedBy ?? "provider");
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: idTokenAlgorithm, kid: key.kid, typ: "JWT" })
      .setIssuer(options.issuer)
      .setAudience(options.audience)
      .setSubject(sub)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(key.privateKey);
    return { token, sub, expiresAt: exp * 1000 };
  }

  issueCode(grant: Omit<CodeGrant, "expiresAt" | "email"> & { account: IdpAccount }): string {
    const code = `c.${randomToken()}`;
    const { account, ...rest } = grant;
    remember(this.codes, code, { ...rest, email: account.email, expiresAt: this.now() + codeLifetimeMs });
    return code;
  }

  issueAccessToken(options: {
    provider: OAuth2ProviderName;
    account: IdpAccount;
    clientId: string;
    lifetimeSeconds?: number | undefined;
  }): { token: string; expiresAt: number } {
    const token = `EAA${randomToken(32)}`;
    const issuedAt = this.now();
    const expiresAt = issuedAt + (options.lifetimeSeconds ?? defaultTokenLifetimeSeconds) * 1000;
    remember(this.accessTokens, token, {
      provider: options.provider,
      email: options.account.email,
      clientId: options.clientId,
      issuedAt,
      expiresAt,
    });
    return { token, expiresAt };
  }

  // ---------------------------------------------------------------------------------------------
  // The authorization endpoint

  /** What is wrong with an authorization request, before anything is shown (never redirected). */
  authorizationProblem(provider: OAuth2ProviderName, params: AuthorizationParams): JsonReply | null {
    const client = this.context.client(provider);
    if (!client || params.client_id !== client.clientId)
      return oauthError(400, "unauthorized_client", `no client '${params.client_id ?? ""}' is registered here`);
    let redirect: URL | null = null;
    try {
      redirect = new URL(params.redirect_uri ?? "");
    } catch {}
    if (!redirect || (redirect.protocol !== "http:" && redirect.protocol !== "https:") || redirect.hash)
      return oauthError(400, "invalid_request", "redirect_uri must be an absolute http(s) URL without a fragment");
    if (params.response_type !== "code")
      return oauthError(400, "unsupported_response_type", "only response_type=code is supported");
    if (params.code_challenge !== undefined && params.code_challenge_method !== "S256")
      return oauthError(400, "invalid_request", "code_challenge_method must be S256");
    return null;
  }

  /** The picker's answer: an account chosen (or added), or cancelled. */
  authorize(
    provider: OAuth2ProviderName,
    params: AuthorizationParams,
    choice: { account: IdpAccount } | "cancel",
  ): AuthorizeOutcome {
    const problem = this.authorizationProblem(provider, params);
    if (problem) return { kind: "error", reply: problem };
    const redirectUri = params.redirect_uri!;
    const fields: Record<string, string> = {};
    if (choice === "cancel") {
      if (provider === "oauth2-apple") fields.error = "user_cancelled_authorize";
      else if (provider === "oauth2-facebook")
        Object.assign(fields, {
          error: "access_denied",
          error_code: "200",
          error_description: "Permissions error",
          error_reason: "user_denied",
        });
      else fields.error = "access_denied";
    } else {
      const { account } = choice;
      fields.code = this.issueCode({
        provider,
        account,
        clientId: params.client_id!,
        redirectUri,
        nonce: params.nonce,
        codeChallenge: params.code_challenge,
        scope: params.scope ?? "",
      });
      // Sign in with Apple posts the user's name (and e-mail) the first time they authorize a client.
      const first = `${account.email}\0${params.client_id}`;
      if (provider === "oauth2-apple" && !this.authorized.has(first)) {
        if (this.authorized.size >= maxRecords) this.authorized.clear();
        this.authorized.add(first);
        const names = splitName(account.name);
        fields.user = JSON.stringify({
          name: { firstName: names.given, lastName: names.family },
          email: account.email,
        });
      }
    }
    if (params.state !== undefined) fields.state = params.state;
    if (params.response_mode === "form_post") return { kind: "form-post", action: redirectUri, fields };
    const url = new URL(redirectUri);
    for (const [key, value] of Object.entries(fields)) url.searchParams.set(key, value);
    return { kind: "redirect", location: url.href };
  }

  // ---------------------------------------------------------------------------------------------
  // The token endpoint (OpenID Connect: Google, Apple)

  async token(provider: OAuth2ProviderName, form: Record<string, string>, issuer: string): Promise<JsonReply> {
    if (provider === "oauth2-facebook")
      return oauthError(400, "unsupported_grant_type", "Facebook exchanges codes at /oauth/access_token");
    if (form.grant_type !== "authorization_code")
      return oauthError(400, "unsupported_grant_type", "grant_type must be authorization_code");
    const client = this.context.client(provider);
    if (!client || form.client_id !== client.clientId)
      return oauthError(401, "invalid_client", `no client '${form.client_id ?? ""}' is registered here`);
    const secretProblem = await this.clientSecretProblem(provider, client, form.client_secret, issuer);
    if (secretProblem) return oauthError(401, "invalid_client", secretProblem);
    const grant = this.takeCode(provider, form.code, client.clientId, form.redirect_uri);
    if (typeof grant === "string") return oauthError(400, "invalid_grant", grant);
    if (grant.codeChallenge !== undefined) {
      const verifier = form.code_verifier ?? "";
      const challenge = createHash("sha256").update(verifier).digest("base64url");
      if (challenge !== grant.codeChallenge)
        return oauthError(400, "invalid_grant", "code_verifier does not match the code_challenge");
    }
    const account = this.upsertAccount({ email: grant.email }).account;
    const idToken = await this.idToken({
      provider,
      account,
      issuer,
      audience: client.clientId,
      nonce: grant.nonce,
    });
    const access = this.issueAccessToken({ provider, account, clientId: client.clientId });
    return {
      status: 200,
      body: {
        access_token: access.token,
        token_type: "Bearer",
        expires_in: defaultTokenLifetimeSeconds,
        id_token: idToken.token,
        scope: grant.scope,
      },
    };
  }

  private async clientSecretProblem(
    provider: OAuth2ProviderName,
    client: IdpClient,
    given: string | undefined,
    issuer: string,
  ): Promise<string | null> {
    if (given === undefined || given === "") return "client_secret is required";
    const expected = client.clientSecret;
    if (provider === "oauth2-apple" && expected?.includes("-----BEGIN")) {
      // A client-secret JWT signed with the team's key: its claims are Apple's rules.
      try {
        await jwtVerify(given, createPublicKey(expected), {
          algorithms: ["ES256"],
          audience: issuer,
          subject: client.clientId,
          ...(client.teamId ? { issuer: client.teamId } : {}),
          currentDate: new Date(this.now()),
        });
        return null;
      } catch (error) {
        return `the client-secret JWT is not valid: ${(error as Error).message}`;
      }
    }
    return given === expected ? null : "the client secret is wrong";
  }

  private takeCode(
    provider: OAuth2ProviderName,
    code: string | undefined,
    clientId: string,
    redirectUri: string | undefined,
  ): CodeGrant | string {
    const grant = code === undefined ? undefined : this.codes.get(code);
    if (!grant || grant.provider !== provider || grant.expiresAt <= this.now()) {
      if (grant) this.codes.delete(code!);
      return "the code is unknown, used or expired";
    }
    // A code is good once, whatever the outcome (RFC 6749 §4.1.2).
    this.codes.delete(code!);
    if (grant.clientId !== clientId) return "the code was issued to another client";
    if (grant.redirectUri !== redirectUri) return "redirect_uri does not match the authorization request";
    return grant;
  }

  // ---------------------------------------------------------------------------------------------
  // Facebook's Graph API

  facebookAccessToken(query: Record<string, string | undefined>): JsonReply {
    const client = this.context.client("oauth2-facebook");
    if (!client || query.client_id !== client.clientId)
      return graphError("Error validating application. Invalid application ID.", 101);
    if (!query.client_secret || query.client_secret !== client.clientSecret)
      return graphError("Error validating client secret.", 1);
    const grant = this.takeCode("oauth2-facebook", query.code, client.clientId, query.redirect_uri);
    if (typeof grant === "string") return graphError(`Invalid verification code format: ${grant}.`, 100);
    const account = this.upsertAccount({ email: grant.email }).account;
    const access = this.issueAccessToken({ provider: "oauth2-facebook", account, clientId: client.clientId });
    return {
      status: 200,
      body: { access_token: access.token, token_type: "bearer", expires_in: defaultTokenLifetimeSeconds },
    };
  }

  debugToken(query: Record<string, string | undefined>): JsonReply {
    const client = this.context.client("oauth2-facebook");
    if (!client?.clientSecret || query.access_token !== `${client.clientId}|${client.clientSecret}`)
      return graphError("Invalid OAuth access token signature.");
    const grant = query.input_token ? this.accessTokens.get(query.input_token) : undefined;
    if (grant?.provider !== "oauth2-facebook")
      return {
        status: 200,
        body: { data: { is_valid: false, error: { code: 190, message: "Invalid OAuth access token." } } },
      };
    return {
      status: 200,
      body: {
        data: {
          app_id: grant.clientId,
          type: "USER",
          application: this.name,
          expires_at: Math.floor(grant.expiresAt / 1000),
          issued_at: Math.floor(grant.issuedAt / 1000),
          is_valid: grant.expiresAt > this.now(),
          scopes: ["email", "public_profile"],
          user_id: subjectOf("oauth2-facebook", grant.email),
        },
      },
    };
  }

  me(query: Record<string, string | undefined>): JsonReply {
    const grant = query.access_token ? this.accessTokens.get(query.access_token) : undefined;
    if (grant?.provider !== "oauth2-facebook" || grant.expiresAt <= this.now())
      return graphError("Invalid OAuth access token.");
    const account = this.account(grant.email) ?? this.upsertAccount({ email: grant.email }).account;
    const names = splitName(account.name);
    const all: Record<string, unknown> = {
      id: subjectOf("oauth2-facebook", account.email),
      name: account.name,
      email: account.email,
      first_name: names.given,
      ...(names.family ? { last_name: names.family } : {}),
      ...(account.picture !== undefined ? { picture: { data: { url: account.picture } } } : {}),
    };
    const wanted = (query.fields ?? "id,name").split(",").map((f) => f.trim());
    return {
      status: 200,
      body: Object.fromEntries(Object.entries(all).filter(([k]) => k === "id" || wanted.includes(k))),
    };
  }
}
