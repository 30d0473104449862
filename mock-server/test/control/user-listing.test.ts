/**
 * The control API's listing of an app's users (`listUsers`) is bounded: the newest `limit` user
 * objects and registrations, oldest first, with how many there are. On PostgreSQL it reads the page
 * in a few statements, whatever the number of users (a listing of a production app's hundred
 * thousand users held the server for seconds, three statements a user). With `email`, it finds
 * users by a part of the e-mail shown for them, whichever store holds them.
 */
import type { FastifyInstance } from "fastify";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, bearer, call, newApp, testApp, testStore } from "../helpers/app.ts";
import { statementsOf } from "../helpers/postgres.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const listUsers = (appId: string, query = "") =>
  call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users${query}` });

/** An app with users made a minute apart (by its clock): two of them pending, one with sessions and a key. */
async function appWithUsers(): Promise<{ appId: string; emails: string[] }> {
  const appId = await newApp(app, { providers: { "api-key": { enabled: true } } });
  const emails: string[] = [];
  for (let i = 0; i < 7; i++) {
    const email = `user${i}@example.com`;
    emails.push(email);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email, password: "secret-1", confirmed: i !== 2 && i !== 5 },
    });
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 60 },
    });
  }
  const login = () =>
    call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "user6@example.com", password: "secret-1" },
    });
  await login();
  const { body } = await login();
  await call(app, "createApiKey", {
    method: "POST",
    url: `${base}/auth/api_keys`,
    headers: bearer(body.refresh_token),
    payload: { name: "ci" },
  });
  return { appId, emails };
}

describe("listing an app's users", () => {
  it("answers the newest `limit`, oldest first, and how many there are", async () => {
    const { appId, emails } = await appWithUsers();
    const all = await listUsers(appId);
    expect(all.body.total).toBe(7);
    expect(all.body.users.map((u: { email: string }) => u.email)).toEqual(emails);
    expect(all.body.users.map((u: { status: string }) => u.status)).toEqual([
      "active",
      "active",
      "pending",
      "active",
      "active",
      "pending",
      "active",
    ]);
    const newest = await listUsers(appId, "?limit=3");
    expect(newest.body.total).toBe(7);
    expect(newest.body.users.map((u: { email: string }) => u.email)).toEqual(emails.slice(4));
    // Each listed user with its own sessions and keys.
    const last = newest.body.users.at(-1);
    expect(last.sessions).toHaveLength(2);
    expect(last.apiKeys.map((k: { name: string }) => k.name)).toEqual(["ci"]);
    expect(newest.body.users[0].sessions).toEqual([]);
  });

  it("refuses a limit out of 1 to 1,000", async () => {
    const appId = await newApp(app);
    for (const limit of ["0", "1001", "x"]) {
      const { response, body } = await listUsers(appId, `?limit=${limit}`);
      expect(response.statusCode, limit).toBe(400);
      expect(body.error).toBeTruthy();
    }
  });

  it.runIf(testStore() === "postgres")("reads a page in a few statements, whatever the number of users", async () => {
    const { appId } = await appWithUsers();
    const { texts } = await statementsOf(() => listUsers(appId), { own: true });
    expect(texts.length).toBeLessThanOrEqual(6);
    const search = await statementsOf(() => listUsers(appId, "?email=user"), { own: true });
    expect(search.texts.length).toBeLessThanOrEqual(5);
  });
});

/** Signs in through a custom token whose `email` claim becomes the user's profile e-mail. */
async function customTokenUser(appId: string, sub: string, email: string): Promise<string> {
  const token = await new SignJWT({ sub, aud: "search", email })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(signingKey));
  const { response, body } = await call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/custom-token/login`,
    payload: { token },
  });
  expect(response.statusCode).toBe(200);
  return body.user_id;
}
const signingKey = "a-signing-key-for-the-search-tests";

describe("finding an app's users by e-mail", () => {
  const emailsOf = (body: { users: { email?: string }[] }) => body.users.map((u) => u.email);

  it("answers the newest matches, oldest first, and how many match, the case of letters ignored", async () => {
    const { appId, emails } = await appWithUsers();
    const all = await listUsers(appId, `?email=${encodeURIComponent(" USER ")}`);
    expect(all.body.total).toBe(7);
    expect(emailsOf(all.body)).toEqual(emails);
    // A pending registration (no user object yet) is found too, and shown as pending.
    const pending = await listUsers(appId, "?email=User2@");
    expect(pending.body).toMatchObject({ total: 1, users: [{ email: "user2@example.com", status: "pending" }] });
    const page = await listUsers(appId, "?email=%40example.COM&limit=2");
    expect(page.body.total).toBe(7);
    expect(emailsOf(page.body)).toEqual(emails.slice(5));
    // The newest user keeps its sessions and keys in a search's page too.
    expect(page.body.users.at(-1).sessions).toHaveLength(2);
    expect(page.body.users.at(-1).apiKeys).toHaveLength(1);
    const none = await listUsers(appId, "?email=nobody");
    expect(none.body).toEqual({ total: 0, users: [] });
  });

  it("takes the text as it is: % and _ are no wildcards", async () => {
    const appId = await newApp(app);
    for (const email of ["first_last@example.com", "firstxlast@example.com", "100%@example.com", "100x@example.com"]) {
      await call(app, "createUser", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/users`,
        payload: { email, password: "secret-1" },
      });
    }
    expect(emailsOf((await listUsers(appId, "?email=_")).body)).toEqual(["first_last@example.com"]);
    expect(emailsOf((await listUsers(appId, "?email=%25")).body)).toEqual(["100%@example.com"]);
  });

  it("finds a user without a registration by its profile's e-mail (A–Z folded there), and never an anonymous one", async () => {
    const appId = await newApp(app, {
      providers: {
        "anon-user": { enabled: true },
        "custom-token": { enabled: true, signingKey, audience: "search", metadataFields: [{ name: "email" }] },
      },
    });
    await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      payload: {},
    });
    const grace = await customTokenUser(appId, "grace", "Grace.Hopper@Navy.example");
    const umlaut = await customTokenUser(appId, "umlaut", "ÄDA@Example.NET");
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ÖDA@example.net", password: "secret-1" },
    });
    const found = await listUsers(appId, "?email=grace.hopper%40navy");
    expect(found.body).toMatchObject({ total: 1, users: [{ id: grace, email: "Grace.Hopper@Navy.example" }] });
    // A profile's e-mail folds A–Z only; a registration's address folds every letter (its
    // uniqueness does): the same search finds both stores' same users.
    const folded = await listUsers(appId, `?email=${encodeURIComponent("ÄDA@EXAMPLE")}`);
    expect(folded.body.users.map((u: { id: string }) => u.id)).toEqual([umlaut]);
    const lower = await listUsers(appId, `?email=${encodeURIComponent("öda@")}`);
    expect(emailsOf(lower.body)).toEqual(["ÖDA@example.net"]);
    expect((await listUsers(appId, `?email=${encodeURIComponent("äda@")}`)).body.total).toBe(0);
    // The anonymous user has no e-mail to match: a search of every address leaves it out.
    const everyone = await listUsers(appId);
    expect(everyone.body.total).toBe(4);
    expect((await listUsers(appId, "?email=%40")).body.total).toBe(3);
  });

  it("refuses an empty search or one longer than an e-mail may be", async () => {
    const appId = await newApp(app);
    for (const email of ["", "x".repeat(321)]) {
      const { response, body } = await listUsers(appId, `?email=${email}`);
      expect(response.statusCode, email).toBe(400);
      expect(body.error).toBeTruthy();
    }
  });
});
