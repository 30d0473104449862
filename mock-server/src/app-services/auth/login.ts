/**
 * Log in with a provider, or (with `?link=true`) attach the provider's identity to the user of
 * the access token. The user object of an e-mail/password, custom-token, custom-function or
 * OAuth 2.0 (Google, Apple, Facebook: their token flows) identity is created at its first login,
 * as on the hosted service.
 */
import type { FastifyBaseLogger, FastifyRequest } from "fastify";
import { providerEnabled } from "../../config/app-config.ts";
import { jsonTextInSlices } from "../../data/wide-values.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { authenticateToken } from "../../oauth2/authenticate.ts";
import { oauth2Settings } from "../../oauth2/settings.ts";
import type { AppRuntime } from "../../runtime/app-runtime.ts";
import type { Emulator } from "../../runtime/emulator.ts";
import { newObjectIdHex, randomLetters, sha256Hex } from "../../state/ids.ts";
import { standInHash } from "../../state/passwords.ts";
import type { StoredIdentity } from "../../store/store.ts";
import { admitAnonymousSignup } from "../counted-limits.ts";
import { defineRoute, sendJson } from "../route.ts";
import { deviceIdFrom } from "../session-tokens.ts";
import { verifyCustomToken } from "./custom-token.ts";
import {
  type Authenticated,
  type LoginReply,
  linkIdentity,
  providerIdentity,
  signInAs,
  signInContext,
  startRegistrationLogin,
} from "./sign-in.ts";
import { refuseUnregistrable, verify } from "./userpass.ts";

/** The fields of a login's body that are the login's own, not a custom function's payload. */
const loginFields = new Set(["options", "provider"]);

function requiredString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== "string" || value === "") throw errors.requiredString(field);
  return value;
}

/** A password's verdict on a hash, once checked: not checked again for the same hash. */
interface Verdict {
  hash: string;
  valid: boolean;
}

/**
 * An e-mail/password login through the registration this instance kept at the address's last
 * login here (`UserRecords.keptAccount`; PostgreSQL): the password checked against the kept hash,
 * then the session started in one step that checks the registration is still as kept. Otherwise
 * (none kept, another password, or the registration changed on some instance) the login reads the
 * registration afresh as without it, with the password's verdict on the kept hash.
 */
async function loginThroughKept(
  emulator: Emulator,
  app: AppRuntime,
  body: Record<string, unknown>,
  /** The client's lane of password work (state/password-work.ts). */
  lane: string,
  log: FastifyBaseLogger,
): Promise<{ reply: LoginReply } | { checked: Verdict } | undefined> {
  const username = requiredString(body, "username");
  const password = requiredString(body, "password");
  refuseUnregistrable(username, password);
  const kept = app.users.keptAccount?.(username);
  if (!kept?.userId) return undefined;
  const valid = await verify(emulator, lane, "held", password, kept.passwordHash);
  const checked = { hash: kept.passwordHash, valid };
  if (!checked.valid) return { checked };
  const started = await startRegistrationLogin(
    emulator,
    app,
    { accountId: kept.id, ownerId: kept.userId, passwordHash: kept.passwordHash },
    deviceIdFrom(body),
    log,
  );
  if ("reply" in started) return started;
  app.users.forgetAccount?.(username);
  return { checked };
}

/** The longest string taken as an API key (the keys are 64 hex digits). */
const maxApiKeyLength = 256;

/**
 * What a provider says of the credentials in `body`: the identity, its user if it has one. Also an
 * HTTPS endpoint's application authentication (`apiKey`, `email` and `password`, `jwtTokenString`).
 */
export async function authenticate(
  request: FastifyRequest,
  app: AppRuntime,
  provider: string,
  body: Record<string, unknown>,
  linking: boolean,
  /** The cost of the passwords this server hashes (the stand-in's). */
  passwordHashCost: number,
  /** The password's verdict on a registration's hash kept here (`loginThroughKept`). */
  checked?: Verdict,
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
      // (A link's refusal in words realm-web does not retry on: catalogue's linkInvalidPassword.)
      const refused = linking ? errors.linkInvalidPassword : errors.invalidPassword;
      refuseUnregistrable(username, password, refused);
      const account = await app.users.accountByEmail(username);
      // Unknown addresses and pending registrations answer like a wrong password, after the same
      // work: the password is checked in every case (against a stand-in hash without an account).
      const passwordHash = account?.passwordHash ?? (await standInHash(passwordHashCost));
      // A check against a registration's own hash goes before the stand-in's (state/password-work.ts).
      const valid =
        checked?.hash === passwordHash
          ? checked.valid
          : await verify(
              request.server.emulator,
              addressKey(request.ip),
              account ? "held" : "other",
              password,
              passwordHash,
            );
      if (!account?.confirmed || !valid) throw refused();
      // The registration may have gone (its user deleted) or changed while the password was
      // checked: it is read again with the user it belongs to — for a registration tied to its
      // user (every login after the first), as the session starts, in the same step (signInAs).
      if (!linking && account.userId !== null)
        return {
          user: undefined,
          identity: identityOf(account.id),
          data: { email: account.email },
          claimAccount: { accountId: account.id, passwordHash },
          registration: { accountId: account.id, ownerId: account.userId, passwordHash },
        };
      const now = await app.users.accountAndOwner(account.id);
      if (!now) throw refused();
      return {
        user: now.owner,
        identity: identityOf(account.id),
        data: { email: account.email },
        claimAccount: { accountId: account.id, passwordHash },
      };
    }
    case "api-key": {
      const key = requiredString(body, "key");
      // (A key is 64 hex digits: a longer string is none, and is not hashed.)
      if (key.length > maxApiKeyLength) throw errors.invalidApiKey();
      // Read from the store on every login: a key disabled on any instance is refused.
      const apiKey = await app.apiKeys.byHash(sha256Hex(key));
      if (!apiKey || apiKey.disabled) throw errors.invalidApiKey();
      const owner = await app.users.get(apiKey.userId);
      if (!owner) throw errors.invalidApiKey();
      // A user API key logs in as its owner.
      return { user: owner, identity: identityOf(apiKey.id), data: {}, apiKeyId: apiKey.id };
    }
    case "custom-token": {
      const { sub, data } = await verifyCustomToken(app, requiredString(body, "token"));
      return { user: await app.users.byIdentity(provider, sub), identity: identityOf(sub), data, refreshData: true };
    }
    case "custom-function": {
      // The payload is the body without the login's own fields: anything a client sends, written
      // for the function a slice at a time (a copy of 200,000 fields, then its text, held 0.3 s).
      const id = await app.functions.runAuthFunction(await jsonTextInSlices(body, loginFields));
      return { user: await app.users.byIdentity(provider, id), identity: identityOf(id), data: {} };
    }
    case "oauth2-google":
    case "oauth2-apple":
    case "oauth2-facebook": {
      const settings = oauth2Settings(app.config, provider);
      if (!settings) throw errors.providerNotEnabled(provider);
      const field = provider === "oauth2-facebook" ? "accessToken" : "id_token";
      // Google's code flow sends an authorization code instead of the ID token.
      const credentials =
        provider === "oauth2-google" && typeof body.authCode === "string" && body.authCode !== ""
          ? { authCode: body.authCode }
          : { [field]: requiredString(body, field) };
      return providerIdentity(
        app,
        settings,
        await authenticateToken(signInContext(request, app), settings, credentials),
      );
    }
    default:
      throw errors.providerNotEnabled(provider);
  }
}

export default defineRoute("login", "login", async (request, reply) => {
  const { emulator } = request.server;
  const app = request.appRuntime!;
  const provider = request.params.provider;
  if (!providerEnabled(app.config, provider)) throw errors.providerNotEnabled(provider);
  // No body at all is an empty one (the documentation's `curl -X POST …/anon-user/login`); a `null` is not.
  const body = (request.body === undefined ? {} : request.body) as Record<string, unknown>;
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw errors.badRequest("request body must be a JSON object");
  const linking = request.query.link === "true";
  let checked: Verdict | undefined;
  if (provider === "local-userpass" && !linking) {
    const through = await loginThroughKept(emulator, app, body, addressKey(request.ip), request.log);
    if (through && "reply" in through) return sendJson(reply, 200, through.reply);
    checked = through?.checked;
  }
  const auth = await authenticate(request, app, provider, body, linking, emulator.options.passwordHashCost, checked);
  if (linking) {
    const caller = request.caller!;
    return sendJson(reply, 200, await linkIdentity(emulator, caller, auth, String(caller.claims.baas_device_id)));
  }
  // One client address may create only so many anonymous users a day (docs/decisions/0018-fair-shares.md).
  if (!auth.user && provider === "anon-user") await admitAnonymousSignup(reply, emulator.store, app, request.ip);
  return sendJson(reply, 200, await signInAs(emulator, app, auth, deviceIdFrom(body), request.log));
});
