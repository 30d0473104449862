/** User API keys: lifecycle, limits, secrets shown once, and logins with a key. */

import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { maxApiKeyNameLength } from "../../src/app-services/api-keys/create-api-key.ts";
import {
  anonymousLogin,
  base,
  bearer,
  beforeNext,
  beforeSessionsStart,
  bothBefore,
  call,
  emailUser,
  getProfile,
  newApp,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const keys = `${base}/auth/api_keys`;
const keyLogin = (appId: string, key: string) =>
  call(app, "login", { method: "POST", url: `${base}/app/${appId}/auth/providers/api-key/login`, payload: { key } });
const create = (token: string, name: unknown) =>
  call(app, "createApiKey", {
    method: "POST",
    url: keys,
    headers: bearer(token),
    payload: name === undefined ? {} : { name },
  });

describe("API keys", () => {
  it("create shows the secret once; list and get never do; the key logs in as its owner", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "k@example.com", "secret-1");
    const { response, body: created } = await create(owner.refresh_token, "ci-runner");
    expect(response.statusCode).toBe(201);
    expect(created).toEqual({
      _id: expect.stringMatching(/^[0-9a-f]{24}$/),
      key: expect.stringMatching(/^[0-9a-f]{64}$/),
      name: "ci-runner",
      disabled: false,
    });
    const list = await call(app, "listApiKeys", { method: "GET", url: keys, headers: bearer(owner.refresh_token) });
    expect(list.body).toEqual([{ _id: created._id, name: "ci-runner", disabled: false }]);
    const one = await call(app, "getApiKey", {
      method: "GET",
      url: `${keys}/${created._id}`,
      headers: bearer(owner.refresh_token),
    });
    expect(one.body).toEqual({ _id: created._id, name: "ci-runner", disabled: false });
    // Only a hash is kept.
    const stored = (await (await app.emulator.apps.get(appId))!.apiKeys.all())[0]!;
    expect(JSON.stringify(stored)).not.toContain(created.key);

    const keyLogin = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: created.key },
    });
    expect(keyLogin.body.user_id).toBe(owner.user_id);
  });

  it("needs the refresh token; access tokens and missing headers are refused", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "t@example.com", "secret-1");
    expect((await create(owner.access_token, "x")).response.statusCode).toBe(401);
    const missing = await call(app, "listApiKeys", { method: "GET", url: keys });
    expect(missing.body).toMatchObject({ error: "must authenticate first" });
  });

  it("validates names: required, ASCII letters, digits, _ and -, unique per user", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "n@example.com", "secret-1");
    const missing = await create(owner.refresh_token, undefined);
    expect(missing.body).toEqual({ error: "'name' is a required string", link: expect.any(String) });
    const wrongType = await create(owner.refresh_token, 12);
    expect(wrongType.body.error).toBe("'name' is a required string");
    const invalid = await create(owner.refresh_token, "no spaces!");
    expect(invalid.body).toMatchObject({
      error: "can only contain ASCII letters, numbers, underscores, and hyphens",
      error_code: "InvalidParameter",
    });
    await create(owner.refresh_token, "dup");
    expect((await create(owner.refresh_token, "dup")).response.statusCode).toBe(409);
    expect((await create(owner.refresh_token, "n".repeat(maxApiKeyNameLength))).response.statusCode).toBe(201);
    const long = await create(owner.refresh_token, "n".repeat(maxApiKeyNameLength + 1));
    expect([long.response.statusCode, long.body]).toEqual([
      400,
      expect.objectContaining({
        error: `can be at most ${maxApiKeyNameLength} characters long`,
        error_code: "InvalidParameter",
      }),
    ]);
  });

  it("keeps no key of a user deleted while the request was on its way (401 InvalidSession)", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "gone@example.com", "secret-1");
    const runtime = (await app.emulator.apps.get(appId))!;
    const add = runtime.apiKeys.add.bind(runtime.apiKeys);
    // The user deleted after the request's session was checked, before the store adds its key.
    runtime.apiKeys.add = async (key, maxPerUser) => {
      await runtime.store.deleteUser(key.userId);
      return add(key, maxPerUser);
    };
    try {
      const { response, body } = await create(owner.refresh_token, "late");
      expect(response.statusCode).toBe(401);
      expect(body).toMatchObject({ error: "invalid session: user not found", error_code: "InvalidSession" });
      expect(await runtime.apiKeys.forUser(owner.user_id)).toEqual([]);
    } finally {
      runtime.apiKeys.add = add;
    }
  });

  it("starts no session for a user deleted while its key's login was on its way (401, the key gone)", async () => {
    const appId = await newApp(app, { providers: { "api-key": { enabled: true } } });
    const owner = await emailUser(app, appId, "gone@example.com", "secret-1");
    const { body: key } = await create(owner.refresh_token, "late");
    const { store } = (await app.emulator.apps.get(appId))!;
    // The user deleted after the key named it, before the store starts the session.
    const { response, body } = await beforeSessionsStart(
      app,
      appId,
      (session) => store.deleteUser(session.userId),
      () => keyLogin(appId, key.key),
    );
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: "invalid API key", error_code: "AuthError" });
    expect(await store.counts()).toEqual({ users: 0, pendingUsers: 0 });
    expect(await store.sessions.forUser(owner.user_id)).toEqual([]);
  });

  it("starts no session for a user disabled while its key's login was on its way, none to revive", async () => {
    const appId = await newApp(app, { providers: { "api-key": { enabled: true } } });
    const owner = await emailUser(app, appId, "off@example.com", "secret-1");
    const { body: key } = await create(owner.refresh_token, "late");
    const disable = (disabled: boolean) =>
      call(app, "updateUser", {
        method: "PATCH",
        url: `/_mock/v1/apps/${appId}/users/${owner.user_id}`,
        payload: { disabled },
      });
    // The user disabled (its sessions ended) after the login read it, before the session starts.
    const { response, body } = await beforeSessionsStart(
      app,
      appId,
      () => disable(true),
      () => keyLogin(appId, key.key),
    );
    expect(response.statusCode).toBe(401);
    expect(body).toMatchObject({ error: "user disabled", error_code: "UserDisabled" });
    // Enabled again, the user has no session from that login (disabling ended every one).
    const { body: enabled } = await disable(false);
    expect(enabled.sessions).toEqual([]);
  });

  it("starts no session of a key disabled or deleted while its login was on its way", async () => {
    const appId = await newApp(app, { providers: { "api-key": { enabled: true } } });
    const owner = await emailUser(app, appId, "keyoff@example.com", "secret-1");
    const runtime = (await app.emulator.apps.get(appId))!;
    const store = runtime.store;
    for (const change of ["disable", "delete"] as const) {
      const { body: key } = await create(owner.refresh_token, `late-${change}`);
      // The key disabled or deleted (its sessions ended) after the login checked it, before the session starts.
      const { response, body } = await beforeSessionsStart(
        app,
        appId,
        () => (change === "disable" ? runtime.apiKeys.setDisabled(key._id, true) : runtime.apiKeys.remove(key._id)),
        () => keyLogin(appId, key.key),
      );
      expect(response.statusCode, change).toBe(401);
      expect(body, change).toMatchObject({ error_code: "AuthError" });
      const sessions = await store.sessions.forUser(owner.user_id);
      expect(
        sessions.filter((s) => s.apiKeyId === key._id),
        change,
      ).toEqual([]);
    }
  });

  it("allows 20 keys per user, and none for anonymous users", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "m@example.com", "secret-1");
    for (let i = 0; i < 20; i++) expect((await create(owner.refresh_token, `key-${i}`)).response.statusCode).toBe(201);
    expect((await create(owner.refresh_token, "key-20")).response.statusCode).toBe(403);
    const anon = await anonymousLogin(app, appId);
    expect((await create(anon.refresh_token, "anon")).body.error).toBe("anonymous users cannot create API keys");
  });

  it("disable stops logins, enable restores them; another user's key is not found; delete of an unknown id is a no-op", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "o@example.com", "secret-1");
    const other = await emailUser(app, appId, "x@example.com", "secret-1");
    const { body: key } = await create(owner.refresh_token, "toggle");
    const loginWithKey = () =>
      call(app, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/api-key/login`,
        payload: { key: key.key },
      });

    expect(
      (
        await call(app, "disableApiKey", {
          method: "PUT",
          url: `${keys}/${key._id}/disable`,
          headers: bearer(owner.refresh_token),
        })
      ).response.statusCode,
    ).toBe(204);
    const refused = await loginWithKey();
    expect(refused.response.statusCode).toBe(401);
    // AuthError: the code realm-kotlin's error mapping reads with this text from the service.
    expect(refused.body).toMatchObject({ error: "invalid API key", error_code: "AuthError" });
    await call(app, "enableApiKey", {
      method: "PUT",
      url: `${keys}/${key._id}/enable`,
      headers: bearer(owner.refresh_token),
    });
    expect((await loginWithKey()).response.statusCode).toBe(200);

    for (const [operationId, method, url] of [
      ["getApiKey", "GET", `${keys}/${key._id}`],
      ["enableApiKey", "PUT", `${keys}/${key._id}/enable`],
      ["disableApiKey", "PUT", `${keys}/${key._id}/disable`],
    ] as const) {
      const { response, body } = await call(app, operationId, { method, url, headers: bearer(other.refresh_token) });
      expect(response.statusCode).toBe(404);
      expect(body).toMatchObject({ error: "API key not found", error_code: "APIKeyNotFound" });
    }
    const noop = await call(app, "deleteApiKey", {
      method: "DELETE",
      url: `${keys}/ffffffffffffffffffffffff`,
      headers: bearer(owner.refresh_token),
    });
    expect(noop.response.statusCode).toBe(204);
    const foreign = await call(app, "deleteApiKey", {
      method: "DELETE",
      url: `${keys}/${key._id}`,
      headers: bearer(other.refresh_token),
    });
    expect(foreign.response.statusCode).toBe(204);
    expect((await loginWithKey()).response.statusCode).toBe(200);
  });

  it("announces one deletion of a key two requests delete at once (both 204: an unknown id is a no-op)", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "twice-key@example.com", "secret-1");
    const { body: key } = await create(owner.refresh_token, "twice");
    const announced: unknown[] = [];
    const stop = app.emulator.events.subscribe((event) => {
      if (event.type === "user" && event.action === "api-key-deleted") announced.push(event);
    });
    bothBefore(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).apiKeys), "remove");
    const both = await Promise.all(
      [1, 2].map(() =>
        call(app, "deleteApiKey", {
          method: "DELETE",
          url: `${keys}/${key._id}`,
          headers: bearer(owner.refresh_token),
        }),
      ),
    );
    vi.restoreAllMocks();
    stop();
    expect(both.map(({ response }) => response.statusCode)).toEqual([204, 204]);
    expect(announced).toHaveLength(1);
  });

  it("announces each change of a key as its owner's event: created, disabled, enabled, deleted", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "key-events@example.com", "secret-1");
    const announced: string[] = [];
    const stop = app.emulator.events.subscribe((event) => {
      if (event.type === "user" && event.appId === appId && event.id === owner.user_id) announced.push(event.action);
    });
    const { body: key } = await create(owner.refresh_token, "watched");
    for (const [operationId, action] of [
      ["disableApiKey", "disable"],
      ["enableApiKey", "enable"],
    ] as const) {
      const changed = await call(app, operationId, {
        method: "PUT",
        url: `${keys}/${key._id}/${action}`,
        headers: bearer(owner.refresh_token),
      });
      expect(changed.response.statusCode).toBe(204);
    }
    const deleted = await call(app, "deleteApiKey", {
      method: "DELETE",
      url: `${keys}/${key._id}`,
      headers: bearer(owner.refresh_token),
    });
    expect(deleted.response.statusCode).toBe(204);
    stop();
    expect(announced).toEqual(["api-key-created", "api-key-disabled", "api-key-enabled", "api-key-deleted"]);
  });

  it("answers an enable or disable of a key deleted meanwhile 404 APIKeyNotFound, as a moment later", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "late-key@example.com", "secret-1");
    for (const [operationId, action] of [
      ["enableApiKey", "enable"],
      ["disableApiKey", "disable"],
    ] as const) {
      const { body: key } = await create(owner.refresh_token, `late-${action}`);
      beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).apiKeys), "setDisabled", async () => {
        const deleted = await call(app, "deleteApiKey", {
          method: "DELETE",
          url: `${keys}/${key._id}`,
          headers: bearer(owner.refresh_token),
        });
        expect(deleted.response.statusCode).toBe(204);
      });
      const late = await call(app, operationId, {
        method: "PUT",
        url: `${keys}/${key._id}/${action}`,
        headers: bearer(owner.refresh_token),
      });
      vi.restoreAllMocks();
      expect([late.response.statusCode, late.body]).toEqual([
        404,
        expect.objectContaining({ error: "API key not found", error_code: "APIKeyNotFound" }),
      ]);
    }
  });

  it("refuses to delete the key of the session making the request (403); deleting it elsewhere ends its sessions", async () => {
    const appId = await newApp(app);
    const owner = await emailUser(app, appId, "s@example.com", "secret-1");
    const { body: key } = await create(owner.refresh_token, "self");
    const keySession = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: key.key },
    });
    const own = await call(app, "deleteApiKey", {
      method: "DELETE",
      url: `${keys}/${key._id}`,
      headers: bearer(keySession.body.refresh_token),
    });
    expect(own.response.statusCode).toBe(403);
    await call(app, "deleteApiKey", {
      method: "DELETE",
      url: `${keys}/${key._id}`,
      headers: bearer(owner.refresh_token),
    });
    const after = await call(app, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: bearer(keySession.body.refresh_token),
    });
    expect(after.response.statusCode).toBe(401);
  });

  describe("ends the sessions a key opened, at refresh and at their next request; the user's others keep working", () => {
    async function keySessions() {
      const appId = await newApp(app);
      const owner = await emailUser(app, appId, "k@example.com", "secret-1");
      const { body: key } = await create(owner.refresh_token, "revocable");
      const { body: other } = await create(owner.refresh_token, "other");
      const loginWith = async (secret: string) =>
        (
          await call(app, "login", {
            method: "POST",
            url: `${base}/app/${appId}/auth/providers/api-key/login`,
            payload: { key: secret },
          })
        ).body as { access_token: string; refresh_token: string };
      return {
        owner,
        key,
        keyed: [await loginWith(key.key), await loginWith(key.key)],
        byOther: await loginWith(other.key),
      };
    }
    const refresh = (token: string) =>
      call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });

    async function expectEnded(session: { access_token: string; refresh_token: string }) {
      const refreshed = await refresh(session.refresh_token);
      expect(refreshed.response.statusCode).toBe(401);
      expect(refreshed.body).toMatchObject({
        error: "invalid session: failed to find refresh token",
        error_code: "InvalidSession",
      });
      const profile = await getProfile(app, session.access_token);
      expect(profile.response.statusCode).toBe(401);
      expect(profile.body.error_code).toBe("InvalidSession");
    }
    async function expectWorking(session: { access_token: string; refresh_token: string }) {
      expect((await refresh(session.refresh_token)).response.statusCode).toBe(201);
      expect((await getProfile(app, session.access_token)).response.statusCode).toBe(200);
    }

    it("when the key is disabled (enabling it again does not bring them back; not from its own session)", async () => {
      const { owner, key, keyed, byOther } = await keySessions();
      for (const session of keyed) await expectWorking(session);
      const own = await call(app, "disableApiKey", {
        method: "PUT",
        url: `${keys}/${key._id}/disable`,
        headers: bearer(keyed[0]!.refresh_token),
      });
      expect(own.response.statusCode).toBe(403);
      expect(own.body).toMatchObject({ error: "cannot disable the API key of the current session" });
      const disabled = await call(app, "disableApiKey", {
        method: "PUT",
        url: `${keys}/${key._id}/disable`,
        headers: bearer(owner.refresh_token),
      });
      expect(disabled.response.statusCode).toBe(204);
      for (const session of keyed) await expectEnded(session);
      await expectWorking(owner);
      await expectWorking(byOther);
      await call(app, "enableApiKey", {
        method: "PUT",
        url: `${keys}/${key._id}/enable`,
        headers: bearer(owner.refresh_token),
      });
      for (const session of keyed) await expectEnded(session);
    });

    it("when the key is deleted", async () => {
      const { owner, key, keyed, byOther } = await keySessions();
      const deleted = await call(app, "deleteApiKey", {
        method: "DELETE",
        url: `${keys}/${key._id}`,
        headers: bearer(owner.refresh_token),
      });
      expect(deleted.response.statusCode).toBe(204);
      for (const session of keyed) await expectEnded(session);
      await expectWorking(owner);
      await expectWorking(byOther);
    });
  });
});
