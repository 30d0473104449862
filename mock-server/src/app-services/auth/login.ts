/**
 * Log in with a provider, or (with `?link=true`) attach the provider's identity to the user of
 * the access token. The user object of an e-mail/password, custom-token or custom-function
 * identity is created at its first login, as on the hosted service.
 */
import { providerEnabled } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import { newObjectIdHex, randomLetters, sha256Hex } from "../../state/ids.ts";
import { verifyPassword } from "../../state/passwords.ts";
import type { StoredIdentity, StoredUser } from "../../store/store.ts";
import type { Caller } from "../auth-context.ts";
import { type AppServicesRequest, defineRoute, sendJson } from "../route.ts";
import { accessTokenFor, deviceIdFrom, startSession } from "../session-tokens.ts";
import { verifyCustomToken } from "./custom-token.ts";

type LoginRequest = AppServicesRequest<"login">;

interface Authenticated {
  /** The user the credentials belong to, if a user object exists already. */
  user: StoredUser | undefined;
  identity: StoredIdentity;
  /** Profile data for a user created by this login. */
  data: Record<string, unknown>;
  /** The e-mail/password registration that remembers the user who owns the identity. */
  claimAccountId?: string;
  apiKeyId?: string;
}

function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string" || value === "") throw errors.requiredString(field);
  return value;
}

async function authenticate(
  app: AppRuntime,
  provider: string,
  body: Record<string, unknown>,
  linking: boolean,
): Promise<Authenticated> {
  const identityOf = (id: string): StoredIdentity => ({
    id,
    provider_type: provider,
    provider_id: app.providerId(provider),
  });
  switch (provider) {
    case "anon-user": {
      if (linking) throw errors.linkAnonymous();
      return { user: undefined, identity: identityOf(`${newObjectIdHex()}-${randomLetters(24)}`), data: {} };
    }
    case "local-userpass": {
      const username = requiredString(body, "username");
      const password = requiredString(body, "password");
      const account = await app.users.accountByEmail(username);
      // Unknown addresses and pending registrations answer like a wrong password.
      if (!account?.confirmed || !(await verifyPassword(password, account.passwordHash)))
        throw errors.invalidPassword();
      // The registration may have gone (its user deleted) while the password was checked; read
      // again with the user it belongs to.
      const now = await app.users.accountAndOwner(account.id);
      if (!now) throw errors.invalidPassword();
      return {
        user: now.owner,
        identity: identityOf(account.id),
        data: { email: account.email },
        claimAccountId: account.id,
      };
    }
    case "api-key": {
      const key = requiredString(body, "key");
      // Read from the store on every login: a key disabled on any instance is refused.
      const apiKey = await app.apiKeys.byHash(sha256Hex(key));
      if (!apiKey || apiKey.disabled) throw errors.invalidApiKey();
      const owner = await app.users.get(apiKey.userId);
      if (!owner) throw errors.invalidApiKey();
      // A user API key logs in as its owner.
      return { user: owner, identity: identityOf(apiKey.id), data: {}, apiKeyId: apiKey.id };
    }
    case "custom-token": {
      const { sub, data } = verifyCustomToken(app, requiredString(body, "token"));
      return { user: await app.users.byIdentity(provider, sub), identity: identityOf(sub), data };
    }
    case "custom-function": {
      const { options: _options, provider: _provider, ...payload } = body;
      const id = await app.functions.runAuthFunction(payload);
      return { user: await app.users.byIdentity(provider, id), identity: identityOf(id), data: {} };
    }
    default:
      throw errors.providerNotEnabled(provider);
  }
}

async function link(request: LoginRequest, caller: Caller, auth: Authenticated) {
  const { emulator } = request.server;
  const { app } = caller;
  let user = caller.user;
  if (auth.apiKeyId !== undefined) {
    if (auth.user?.id !== user.id) throw errors.linkIdentityTaken();
  } else if (auth.user && auth.user.id !== user.id) {
    throw errors.linkIdentityTaken();
  } else if (!auth.user) {
    if (
      auth.identity.provider_type === "local-userpass" &&
      user.identities.some((i) => i.provider_type === "local-userpass")
    ) {
      throw errors.linkSecondUserpass();
    }
    const claim = await app.users.addIdentity(user.id, auth.identity, auth.data, auth.claimAccountId);
    if (!claim) throw errors.sessionUserGone();
    // Another login claimed the identity meanwhile.
    if (!claim.ok && claim.owner.id !== user.id) throw errors.linkIdentityTaken();
    user = claim.ok ? claim.user : claim.owner;
    emulator.events.emit({ type: "user", appId: app.appId, action: "linked", id: user.id });
  }
  const accessToken = await accessTokenFor(emulator, app, user, caller.session);
  return { access_token: accessToken, user_id: user.id, device_id: String(caller.claims.baas_device_id) };
}

export default defineRoute("login", "login", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  const provider = request.params.provider;
  if (!providerEnabled(app.config, provider)) throw errors.providerNotEnabled(provider);
  const body = request.body as Record<string, unknown>;
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw errors.badRequest("request body must be a JSON object");
  const linking = request.query.link === "true";
  const auth = await authenticate(app, provider, body, linking);

  if (linking) return sendJson(reply, 200, await link(request, request.caller!, auth));

  let user = auth.user;
  if (!user) {
    // The store decides who owns a new identity: of concurrent first logins (on any instance) one
    // creates the user, the others log in as it.
    const claim = await app.users.create(
      {
        id: newObjectIdHex(),
        type: "normal",
        disabled: false,
        createdAt: app.clock.now(),
        identities: [auth.identity],
        data: auth.data,
      },
      auth.claimAccountId,
    );
    user = claim.ok ? claim.user : claim.owner;
    if (claim.ok) emulator.events.emit({ type: "user", appId: app.appId, action: "created", id: user.id });
  } else if (provider === "custom-token") {
    user = (await app.users.update(user.id, { data: auth.data })) ?? user;
  }
  if (user.disabled) throw errors.userDisabled();
  const reply_ = await startSession(emulator, app, user, {
    providerType: auth.identity.provider_type,
    identityId: auth.identity.id,
    deviceId: deviceIdFrom(body),
    ...(auth.apiKeyId ? { apiKeyId: auth.apiKeyId } : {}),
  });
  emulator.events.emit({ type: "user", appId: app.appId, action: "logged-in", id: user.id });
  return sendJson(reply, 200, reply_);
});
