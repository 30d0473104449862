/**
 * The control API's listing of an app's users (`listUsers`) is bounded: the newest `limit` user
 * objects and registrations, oldest first, with how many there are. On PostgreSQL it reads the page
 * in a few statements, whatever the number of users (a listing of a production app's hundred
 * thousand users held the server for seconds, three statements a user).
 */
import type { FastifyInstance } from "fastify";
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
    const { texts } = await statementsOf(() => listUsers(appId));
    expect(texts.length).toBeLessThanOrEqual(6);
  });
});
