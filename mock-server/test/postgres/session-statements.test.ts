/**
 * A refresh token's request on PostgreSQL reads its session and its user from the database (a
 * session ended on any instance is refused at once: decision 0020), both in one round trip.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import { anonymousLogin, base, bearer, call, newApp, testApp } from "../helpers/app.ts";
import { emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let app: FastifyInstance;

beforeAll(async () => {
  database = await emulatorDatabase("session-statements");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
});

afterAll(async () => {
  await app?.close();
  await database?.drop();
});

const refresh = (token: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(token) });

it("refreshes a session in two round trips and ends it in two, its session and user read together", async () => {
  // (The default app's template keeps custom user data: a new access token reads it.)
  const appId = await newApp(app);
  const { refresh_token } = await anonymousLogin(app, appId);
  const refreshed = await statementsOf(async () =>
    expect((await refresh(refresh_token)).response.statusCode).toBe(201),
  );
  expect(refreshed.roundTrips).toBe(2);
  const ended = await statementsOf(async () =>
    expect(
      (await call(app, "logOut", { method: "DELETE", url: `${base}/auth/session`, headers: bearer(refresh_token) }))
        .response.statusCode,
    ).toBe(204),
  );
  expect(ended.roundTrips).toBe(2);
  const refused = await refresh(refresh_token);
  expect(refused.response.statusCode).toBe(401);
});
