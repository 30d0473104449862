/** The control API's apps, users, tokens, clock and data operations (each reply checked against the document). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  anonymousLogin,
  base,
  bearer,
  beforeNext,
  bothBefore,
  call,
  confirmedRegistration,
  newApp,
  testApp,
} from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

describe("apps", () => {
  it("health, settings and the documents answer", async () => {
    expect((await call(app, "getHealth", { method: "GET", url: "/_mock/v1/health" })).body.status).toBe("ok");
    const settings = await call(app, "getEmulatorConfig", { method: "GET", url: "/_mock/v1/config" });
    expect(settings.body).toMatchObject({
      host: "127.0.0.1",
      defaultAppId: "local-app",
      controlTokenRequired: false,
      passwordHashCost: 4,
    });
    const doc = await call(app, "getOpenApiDocument", { method: "GET", url: "/_mock/v1/openapi/app-services" });
    expect(doc.body.info.title).toBe("Atlas App Services client API");
    expect(
      (await call(app, "getOpenApiDocument", { method: "GET", url: "/_mock/v1/openapi/nope" })).response.statusCode,
    ).toBe(404);
  });

  it("creates apps from the template with deep-merged overrides; ids are unique", async () => {
    const { response, body } = await call(app, "createApp", {
      method: "POST",
      url: "/_mock/v1/apps",
      payload: {
        appId: "merge-test",
        config: { providers: { "local-userpass": { autoConfirm: true } }, values: { extra: 1 } },
      },
    });
    expect(response.statusCode).toBe(201);
    expect(body).toEqual({ appId: "merge-test" });
    const details = await call(app, "getApp", { method: "GET", url: "/_mock/v1/apps/merge-test" });
    expect(details.body.config.providers["local-userpass"]).toMatchObject({
      autoConfirm: true,
      enabled: true,
      confirmEmailSubject: "Confirm your Notes account",
    });
    expect(details.body.config.values).toEqual({ appName: "Notes", extra: 1 });
    expect(details.body.functions).toEqual(expect.arrayContaining(["sum", "noteStats"]));
    const dup = await call(app, "createApp", {
      method: "POST",
      url: "/_mock/v1/apps",
      payload: { appId: "merge-test" },
    });
    expect(dup.response.statusCode).toBe(409);
    const bad = await call(app, "createApp", {
      method: "POST",
      url: "/_mock/v1/apps",
      payload: { config: { providers: { "local-userpass": { autoConfirm: "yes" } } } },
    });
    expect(bad.response.statusCode).toBe(400);
    expect(bad.body.code).toBe("ValidationError");
    const list = await call(app, "listApps", { method: "GET", url: "/_mock/v1/apps" });
    expect(list.body.apps.map((a: { appId: string }) => a.appId)).toEqual(
      expect.arrayContaining(["local-app", "merge-test"]),
    );
  });

  it("redacts secrets in an app's config", async () => {
    const appId = await newApp(app, {
      providers: { "custom-token": { enabled: true, signingKey: "super-secret-key" } },
    });
    const { body } = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
    expect(JSON.stringify(body)).not.toContain("super-secret-key");
  });

  it("reset restores the initial state; delete removes the app (its tokens stop working)", async () => {
    const appId = await newApp(app);
    const session = await anonymousLogin(app, appId);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 10 },
    });
    expect(
      (await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` })).response.statusCode,
    ).toBe(204);
    const details = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
    expect(details.body).toMatchObject({ users: 0, pendingUsers: 0, mail: 0 });
    expect(details.body.clock.offsetMs).toBe(0);
    expect(
      (
        await call(app, "getProfile", {
          method: "GET",
          url: `${base}/auth/profile`,
          headers: bearer(session.access_token),
        })
      ).response.statusCode,
    ).toBe(401);
    expect(
      (await call(app, "deleteApp", { method: "DELETE", url: `/_mock/v1/apps/${appId}` })).response.statusCode,
    ).toBe(204);
    expect((await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` })).response.statusCode).toBe(
      404,
    );
    expect(
      (await call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}/location` })).response.statusCode,
    ).toBe(404);
  });

  it("answers the later of two racing deletions of an app 404, and a reset of one deleted meanwhile", async () => {
    const appId = await newApp(app);
    bothBefore(app.emulator.apps, "delete");
    const both = await Promise.all(
      [1, 2].map(() => call(app, "deleteApp", { method: "DELETE", url: `/_mock/v1/apps/${appId}` })),
    );
    vi.restoreAllMocks();
    expect(both.map(({ response }) => response.statusCode).sort()).toEqual([204, 404]);
    expect(both.find(({ response }) => response.statusCode === 404)!.body).toMatchObject({
      error: `no app with id '${appId}'`,
    });

    const resetting = await newApp(app);
    beforeNext(app.emulator.apps, "reset", async () => {
      const url = `/_mock/v1/apps/${resetting}`;
      expect((await call(app, "deleteApp", { method: "DELETE", url })).response.statusCode).toBe(204);
    });
    const late = await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${resetting}/reset` });
    vi.restoreAllMocks();
    expect([late.response.statusCode, late.body.error]).toEqual([404, `no app with id '${resetting}'`]);
  });

  it("applies a configuration at run time, all or nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cfg-"));
    try {
      const { response, body } = await call(app, "applyConfig", {
        method: "POST",
        url: "/_mock/v1/config/apply",
        payload: {
          apps: [{ appId: "from-config", config: { providers: { "anon-user": { enabled: false } } } }],
          emailjsAccounts: [{ publicKey: "cfg-key" }],
        },
      });
      expect(response.statusCode).toBe(201);
      expect(body).toEqual({ appIds: ["from-config"], emailjsAccounts: ["cfg-key"] });
      const again = await call(app, "applyConfig", {
        method: "POST",
        url: "/_mock/v1/config/apply",
        payload: { apps: [{ appId: "another" }, { appId: "from-config" }] },
      });
      expect(again.response.statusCode).toBe(409);
      expect(await app.emulator.apps.get("another")).toBeUndefined();
      const settings = await call(app, "applyConfig", {
        method: "POST",
        url: "/_mock/v1/config/apply",
        payload: { settings: { port: 1 } },
      });
      expect(settings.response.statusCode).toBe(400);
      writeFileSync(join(dir, "unused"), "");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a configuration that names an app or an EmailJS account twice, creating nothing", async () => {
    for (const [payload, error] of [
      [{ apps: [{ appId: "twice" }, { appId: "twice" }] }, "the configuration names the app 'twice' twice"],
      [
        { apps: [{ appId: "once" }], emailjsAccounts: [{ publicKey: "pk-twice" }, { publicKey: "pk-twice" }] },
        "the configuration names the EmailJS account 'pk-twice' twice",
      ],
    ] as const) {
      const { response, body } = await call(app, "applyConfig", {
        method: "POST",
        url: "/_mock/v1/config/apply",
        payload,
      });
      expect([response.statusCode, body.error]).toEqual([400, error]);
    }
    for (const appId of ["twice", "once"]) expect(await app.emulator.apps.get(appId)).toBeUndefined();
    expect(await app.emulator.emailjs.get("pk-twice")).toBeUndefined();
  });

  it("takes back what it created when an id is taken meanwhile", async () => {
    // An EmailJS account of the configuration's key is made after the check, before its own.
    beforeNext(app.emulator.emailjs, "create", async () => {
      const payload = { publicKey: "pk-raced" };
      const made = await call(app, "createEmailJsAccount", {
        method: "POST",
        url: "/_mock/v1/emailjs/accounts",
        payload,
      });
      expect(made.response.statusCode).toBe(201);
    });
    const { response, body } = await call(app, "applyConfig", {
      method: "POST",
      url: "/_mock/v1/config/apply",
      payload: {
        apps: [{ appId: "raced" }],
        emailjsAccounts: [{ publicKey: "pk-raced-first" }, { publicKey: "pk-raced" }],
      },
    });
    vi.restoreAllMocks();
    expect([response.statusCode, body.error]).toEqual([409, "an EmailJS account with public key 'pk-raced' exists"]);
    expect(await app.emulator.apps.get("raced")).toBeUndefined();
    expect(await app.emulator.emailjs.get("pk-raced-first")).toBeUndefined();
    // The other request's account stays.
    expect(await app.emulator.emailjs.get("pk-raced")).toBeDefined();
  });
});

describe("users", () => {
  it("seeds, lists, gets, disables, confirms and removes users and registrations", async () => {
    const appId = await newApp(app);
    const seeded = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "s@example.com", password: "secret-1" },
    });
    expect(seeded.response.statusCode).toBe(201);
    expect(seeded.body).toMatchObject({
      status: "active",
      email: "s@example.com",
      identities: [{ provider_type: "local-userpass" }],
    });
    const pending = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "p@example.com", password: "secret-1", confirmed: false },
    });
    expect(pending.body).toMatchObject({ status: "pending", identities: [] });
    expect(
      (
        await call(app, "createUser", {
          method: "POST",
          url: `/_mock/v1/apps/${appId}/users`,
          payload: { email: "S@example.com", password: "secret-1" },
        })
      ).response.statusCode,
    ).toBe(409);
    expect(
      (
        await call(app, "createUser", {
          method: "POST",
          url: `/_mock/v1/apps/${appId}/users`,
          payload: { email: "x@example.com", password: "1" },
        })
      ).response.statusCode,
    ).toBe(400);

    const list = await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` });
    expect(list.body.users.map((u: { email: string; status: string }) => [u.email, u.status])).toEqual([
      ["s@example.com", "active"],
      ["p@example.com", "pending"],
    ]);
    const confirmed = await call(app, "confirmPendingUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users/${pending.body.id}/confirm`,
    });
    expect(confirmed.body.status).toBe("confirmed");
    expect(
      (
        await call(app, "confirmPendingUser", {
          method: "POST",
          url: `/_mock/v1/apps/${appId}/users/${pending.body.id}/confirm`,
        })
      ).response.statusCode,
    ).toBe(409);

    const session = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "s@example.com", password: "secret-1" },
    });
    const withSession = await call(app, "getUser", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}`,
    });
    expect(withSession.body.sessions).toHaveLength(1);
    expect(withSession.body.lastLoginAt).toEqual(expect.any(String));

    const disabled = await call(app, "updateUser", {
      method: "PATCH",
      url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}`,
      payload: { disabled: true },
    });
    expect(disabled.body).toMatchObject({ disabled: true, sessions: [] });
    // A registration without a user object has nothing to disable (the document lists the 409).
    const elsewhere = await newApp(app);
    const unclaimed = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${elsewhere}/users`,
      payload: { email: "pending-disable@example.com", password: "secret-1", confirmed: false },
    });
    const refused = await call(app, "updateUser", {
      method: "PATCH",
      url: `/_mock/v1/apps/${elsewhere}/users/${unclaimed.body.id}`,
      payload: { disabled: true },
    });
    expect([refused.response.statusCode, refused.body.code]).toEqual([409, "Conflict"]);
    expect(
      (
        await call(app, "refreshAccessToken", {
          method: "POST",
          url: `${base}/auth/session`,
          headers: bearer(session.body.refresh_token),
        })
      ).response.statusCode,
    ).toBe(401);
    await call(app, "updateUser", {
      method: "PATCH",
      url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}`,
      payload: { disabled: false },
    });

    expect(
      (await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}` }))
        .response.statusCode,
    ).toBe(204);
    expect(
      (await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${pending.body.id}` }))
        .response.statusCode,
    ).toBe(204);
    expect((await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body.users).toEqual(
      [],
    );
    expect(
      (await call(app, "getUser", { method: "GET", url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}` })).response
        .statusCode,
    ).toBe(404);
  });

  it("answers a confirmation of a registration removed meanwhile 404, not 409", async () => {
    const appId = await newApp(app);
    const seeded = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "gone@example.com", password: "secret-1", confirmed: false },
    });
    beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users), "confirmAccount", async () => {
      const url = `/_mock/v1/apps/${appId}/users/${seeded.body.id}`;
      expect((await call(app, "removeUser", { method: "DELETE", url })).response.statusCode).toBe(204);
    });
    const late = await call(app, "confirmPendingUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users/${seeded.body.id}/confirm`,
    });
    vi.restoreAllMocks();
    expect([late.response.statusCode, late.body.error]).toEqual([
      404,
      `no user with id '${seeded.body.id}' in app '${appId}'`,
    ]);
  });

  it.each([
    ["a first login makes its user", "create", false],
    ["a link adds it to a user", "addIdentity", true],
  ] as const)("keeps no user of a registration removed while %s", async (_, method, linking) => {
    const appId = await newApp(app);
    const registration = await confirmedRegistration(app, appId, "gone@example.com");
    const anon = linking ? await anonymousLogin(app, appId) : undefined;
    // The password matched; the registration is removed before the user takes it.
    beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users), method, async () => {
      const url = `/_mock/v1/apps/${appId}/users/${registration}`;
      expect((await call(app, "removeUser", { method: "DELETE", url })).response.statusCode).toBe(204);
    });
    const login = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login${linking ? "?link=true" : ""}`,
      payload: { username: "gone@example.com", password: "secret-1" },
      ...(anon ? { headers: bearer(anon.access_token) } : {}),
    });
    vi.restoreAllMocks();
    // As if the removal came first: the address has no registration to sign in with.
    expect([login.response.statusCode, login.body.error_code]).toEqual([401, "InvalidPassword"]);
    const { users } = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body;
    expect(
      users.map((u: { identities: { provider_type: string }[] }) => u.identities.map((i) => i.provider_type)),
    ).toEqual(linking ? [["anon-user"]] : []);
  });

  it("answers the removal of a registration its first login took meanwhile 404, and keeps the user whole", async () => {
    const appId = await newApp(app);
    const registration = await confirmedRegistration(app, appId, "taken@example.com");
    // The removal found the registration without a user; its first login makes one before it acts.
    beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users), "removeAccount", async () => {
      const login = await call(app, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
        payload: { username: "taken@example.com", password: "secret-1" },
      });
      expect(login.response.statusCode).toBe(200);
    });
    const url = `/_mock/v1/apps/${appId}/users/${registration}`;
    const late = await call(app, "removeUser", { method: "DELETE", url });
    vi.restoreAllMocks();
    // As a moment later: the id names no registration without a user any more.
    expect([late.response.statusCode, late.body.error]).toEqual([
      404,
      `no user with id '${registration}' in app '${appId}'`,
    ]);
    const { users } = (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body;
    expect(users.map((u: { email?: string; status: string }) => [u.email, u.status])).toEqual([
      ["taken@example.com", "active"],
    ]);
  });

  it("answers a seeded user whose registration an app reset cleared meanwhile 409, and keeps nothing", async () => {
    const appId = await newApp(app);
    beforeNext(Object.getPrototypeOf(app.emulator.store.apps.scope(appId).users), "create", async () => {
      const reset = await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
      expect(reset.response.statusCode).toBe(204);
    });
    const seeded = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "cleared@example.com", password: "secret-1" },
    });
    vi.restoreAllMocks();
    expect([seeded.response.statusCode, seeded.body.error]).toEqual([
      409,
      "the registration of 'cleared@example.com' was removed while its user was made",
    ]);
    const details = await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}` });
    expect(details.body).toMatchObject({ users: 0, pendingUsers: 0 });
  });

  it("lists issued tokens oldest first, filtered by address and kind", async () => {
    const appId = await newApp(app);
    for (const email of ["a@example.com", "b@example.com"]) {
      await call(app, "registerUser", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
        payload: { email, password: "secret-1" },
      });
    }
    const all = await call(app, "listAuthTokens", { method: "GET", url: `/_mock/v1/apps/${appId}/auth/tokens` });
    expect(all.body.tokens.map((t: { email: string }) => t.email)).toEqual(["a@example.com", "b@example.com"]);
    const one = await call(app, "listAuthTokens", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/auth/tokens?email=B@EXAMPLE.com&kind=confirm`,
    });
    expect(one.body.tokens).toHaveLength(1);
    expect(
      (await call(app, "listAuthTokens", { method: "GET", url: `/_mock/v1/apps/${appId}/auth/tokens?kind=reset` })).body
        .tokens,
    ).toEqual([]);
    expect(
      (await call(app, "listAuthTokens", { method: "GET", url: `/_mock/v1/apps/${appId}/auth/tokens?kind=other` }))
        .response.statusCode,
    ).toBe(400);
  });

  it("answers the newest `limit` tokens, oldest first, and how many match", async () => {
    const appId = await newApp(app);
    const emails = ["a@example.com", "b@example.com", "c@example.com", "d@example.com"];
    for (const email of emails) {
      await call(app, "registerUser", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
        payload: { email, password: "secret-1" },
      });
    }
    await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/confirm/send`,
      payload: { email: "a@example.com" },
    });
    const list = (query: string) =>
      call(app, "listAuthTokens", { method: "GET", url: `/_mock/v1/apps/${appId}/auth/tokens${query}` });
    const all = await list("");
    expect(all.body.total).toBe(5);
    expect(all.body.tokens.map((t: { email: string }) => t.email)).toEqual([...emails, "a@example.com"]);
    const newest = await list("?limit=2");
    expect(newest.body.total).toBe(5);
    expect(newest.body.tokens.map((t: { email: string }) => t.email)).toEqual(["d@example.com", "a@example.com"]);
    const ofOne = await list("?email=A@example.com&limit=1");
    expect(ofOne.body.total).toBe(2);
    expect(ofOne.body.tokens).toHaveLength(1);
    expect(ofOne.body.tokens[0].tokenId).toBe(all.body.tokens[4].tokenId);
    for (const limit of ["0", "10001", "x"])
      expect((await list(`?limit=${limit}`)).response.statusCode, limit).toBe(400);
  });
});

describe("clock", () => {
  it("reads and advances an app's clock; negative moves are refused", async () => {
    const appId = await newApp(app);
    const before = await call(app, "getClock", { method: "GET", url: `/_mock/v1/apps/${appId}/clock` });
    expect(before.body.offsetMs).toBe(0);
    const after = await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 90 },
    });
    expect(after.body.offsetMs).toBe(90_000);
    expect(after.body.nowMs - before.body.nowMs).toBeGreaterThanOrEqual(90_000);
    expect(
      (
        await call(app, "advanceClock", {
          method: "POST",
          url: `/_mock/v1/apps/${appId}/clock`,
          payload: { advanceBy: -1 },
        })
      ).response.statusCode,
    ).toBe(400);
    expect(
      (await call(app, "advanceClock", { method: "POST", url: "/_mock/v1/apps/nope/clock", payload: { advanceBy: 1 } }))
        .response.statusCode,
    ).toBe(404);
  });
});

describe("data", () => {
  it("seeds, pages through, lists and drops collections", async () => {
    const appId = await newApp(app);
    const seeded = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/db/items`,
      payload: { documents: [{ _id: { $oid: "65a1b2c3d4e5f60718293a50" }, n: 1 }, { n: 2 }, { n: 3 }] },
    });
    expect(seeded.response.statusCode).toBe(201);
    expect(seeded.body.insertedIds[0]).toEqual({ $oid: "65a1b2c3d4e5f60718293a50" });
    const dup = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/db/items`,
      payload: { documents: [{ _id: { $oid: "65a1b2c3d4e5f60718293a50" } }] },
    });
    expect(dup.response.statusCode).toBe(409);
    const page = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/db/items?skip=1&limit=1`,
    });
    expect(page.body).toEqual({
      total: 3,
      documents: [{ _id: expect.objectContaining({ $oid: expect.any(String) }), n: { $numberInt: "2" } }],
    });
    // Past the end, however far: an empty page. Not a number (1e400 is Infinity): 400.
    const far = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/db/items?skip=100000000000000000000`,
    });
    expect(far.body).toEqual({ total: 3, documents: [] });
    const infinite = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/db/items?skip=1e400`,
    });
    expect(infinite.response.statusCode).toBe(400);
    const collections = await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` });
    expect(collections.body.collections).toEqual([{ database: "db", collection: "items", count: 3 }]);
    expect(
      (await call(app, "dropCollection", { method: "DELETE", url: `/_mock/v1/apps/${appId}/data/db/items` })).response
        .statusCode,
    ).toBe(204);
    expect(
      (await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` })).body.collections,
    ).toEqual([]);
    const bad = await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/db/items`,
      payload: { documents: [{ _id: { $oid: "zz" } }] },
    });
    expect(bad.response.statusCode).toBe(400);
  });
});

describe("listing an app's collections", () => {
  it("orders them by database, then collection, by code point: the same on every machine, whatever its locale", async () => {
    const appId = await newApp(app);
    // (A locale's order puts "a" before "B", "a_b" before "a.b", and "ä" after "z" in Swedish.)
    const names: [string, string][] = [
      ["zeta", "x"],
      ["a", "äb"],
      ["a", "zb"],
      ["a", "B"],
      ["a", "a_b"],
      ["a", "a.b"],
      ["a", "😀"],
      ["a", "\uff5e"],
      ["B", "x"],
    ];
    for (const [database, collection] of names) {
      const inserted = await call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/${encodeURIComponent(database)}/${encodeURIComponent(collection)}`,
        payload: { documents: [{ n: 1 }] },
      });
      expect(inserted.response.statusCode, `${database}.${collection}`).toBe(201);
    }
    const listed = await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` });
    expect(
      listed.body.collections.map((c: { database: string; collection: string }) => [c.database, c.collection]),
    ).toEqual([
      ["B", "x"],
      ["a", "B"],
      ["a", "a.b"],
      ["a", "a_b"],
      ["a", "zb"],
      ["a", "äb"],
      ["a", "\uff5e"],
      ["a", "😀"],
      ["zeta", "x"],
    ]);
  });
});

describe("control token", () => {
  it("is required on every control call once configured, but the health check", async () => {
    const locked = await testApp({ controlToken: "let-me-in" });
    try {
      expect((await call(locked, "getHealth", { method: "GET", url: "/_mock/v1/health" })).response.statusCode).toBe(
        200,
      );
      expect((await call(locked, "listApps", { method: "GET", url: "/_mock/v1/apps" })).response.statusCode).toBe(401);
      expect(
        (await call(locked, "listApps", { method: "GET", url: "/_mock/v1/apps", headers: bearer("wrong") })).response
          .statusCode,
      ).toBe(401);
      expect(
        (await call(locked, "listApps", { method: "GET", url: "/_mock/v1/apps", headers: bearer("let-me-in") }))
          .response.statusCode,
      ).toBe(200);
    } finally {
      await locked.close();
    }
  });
});
