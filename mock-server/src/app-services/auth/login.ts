/**
 * Log in with a provider, or (with `?link=true`) attach the provider's identity to the user of
 * the access token. The user object of an e-mail/password, custom-token or custom-function
 * identity is created at its first login, as on the hosted service.
 */
import { providerEnabled } from "../../config/app-config.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import type { AppRuntime } from "../../state/app-runtime.ts";
import type { Emulator } from "../../state/emulator.ts";
import { newObjectIdHex, randomLetters, sha256Hex } from "../../state/ids.ts";
import { verifyPassword } from "../../state/passwords.ts";
import type { StoredIdentity, StoredUser } from "../../state/users.ts";
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
  /** Runs once a user owns the identity (the e-mail/password registration remembers its user). */
  claim?: (user: StoredUser) => void;
  apiKeyId?: string;
}

function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string" || value === "") throw errors.requiredString(field);
  return value;
}

async function authenticate(
  emulator: Emulator,
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
      const account = app.users.accountByEmailAddress(username);
      // Unknown addresses and pending registrations answer like a wrong password.
      if (!account?.confirmed || !(await verifyPassword(password, account.passwordHash)))
        throw errors.invalidPassword();
      if (app.users.account(account.id) !== account) throw errors.invalidPassword();
      const user = account.userId === null ? undefined : app.users.user(account.userId);
      return {
        user,
        identity: identityOf(account.id),
        data: { email: account.email },
        claim: (owner) => {
          account.userId = owner.id;
        },
      };
    }
    case "api-key": {
      const key = requiredString(body, "key");
      const apiKey = app.apiKeys.byKeyHash(sha256Hex(key));
      if (!apiKey || apiKey.disabled) throw errors.invalidApiKey();
      const owner = app.users.user(apiKey.userId);
      if (!owner) throw errors.invalidApiKey();
      // A user API key logs in as its owner.
      return { user: owner, identity: identityOf(apiKey.id), data: {}, apiKeyId: apiKey.id };
    }
    case "custom-token": {
      const { sub, data } = verifyCustomToken(app, requiredString(body, "token"));
      return { user: app.users.userByIdentityId(provider, sub), identity: identityOf(sub), data };
    }
    case "custom-function": {
      const { options: _options, provider: _provider, ...payload } = body;
      const id = await app.functions.runAuthFunction(emulator, payload);
      return { user: app.users.userByIdentityId(provider, id), identity: identityOf(id), data: {} };
    }
    default:
      throw errors.providerNotEnabled(provider);
  }
}

function link(request: LoginRequest, caller: Caller, auth: Authenticated) {
  const { emulator } = request.server;
  const { app, user } = caller;
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
    app.users.addIdentity(user, auth.identity);
    Object.assign(user.data, auth.data);
    auth.claim?.(user);
    emulator.events.emit({ type: "user", appId: app.appId, action: "linked", id: user.id });
  }
  const session = app.sessions.get(caller.sessionId);
  const accessToken = session
    ? accessTokenFor(emulator, app, user, session)
    : accessTokenFor(emulator, app, user, {
        id: caller.sessionId,
        userId: user.id,
        deviceId: String(caller.claims.baas_device_id ?? newObjectIdHex()),
        providerType: auth.identity.provider_type,
        identityId: auth.identity.id,
        createdAt: app.clock.now(),
        expiresAt: app.clock.now(),
      });
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
  const auth = await authenticate(emulator, app, provider, body, linking);

  if (linking) return sendJson(reply, 200, link(request, request.caller!, auth));

  let user = auth.user;
  if (!user) {
    // The identity may have been claimed by a concurrent login while this one was hashing.
    user = app.users.userByIdentityId(auth.identity.provider_type, auth.identity.id);
  }
  if (!user) {
    user = app.users.addUser({
      id: newObjectIdHex(),
      type: "normal",
      disabled: false,
      createdAt: app.clock.now(),
      identities: [auth.identity],
      data: auth.data,
    });
    auth.claim?.(user);
    emulator.events.emit({ type: "user", appId: app.appId, action: "created", id: user.id });
  } else if (provider === "custom-token") {
    Object.assign(user.data, auth.data);
  }
  if (user.disabled) throw errors.userDisabled();
  const reply_ = startSession(emulator, app, user, {
    providerType: auth.identity.provider_type,
    identityId: auth.identity.id,
    deviceId: deviceIdFrom(body),
    ...(auth.apiKeyId ? { apiKeyId: auth.apiKeyId } : {}),
  });
  emulator.events.emit({ type: "user", appId: app.appId, action: "logged-in", id: user.id });
  return sendJson(reply, 200, reply_);
});
