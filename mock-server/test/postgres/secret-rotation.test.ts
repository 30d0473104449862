/**
 * Rotating the signing secret of instances on one database without signing anyone out
 * (`--signing-secret-fallbacks`, docs/decisions/0060-signing-secret-rotation.md): each instance
 * restarted first to accept the new secret, then to sign with it and accept the old one; tokens
 * and browser sign-ins of either secret work on every instance meanwhile, and what still uses the
 * old secret is counted, so that the operator knows when dropping it signs nobody out.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, bearer, call, emailUser, getProfile, newApp, openData, testApp } from "../helpers/app.ts";
import { beginUrl, fragmentOf, location, webRedirect } from "../helpers/oauth2.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

const oldSecret = "the-old-signing-secret-0123456789abcdef";
const newSecret = "the-new-signing-secret-0123456789abcdef";
const metricsToken = "rotation-metrics-token";

let database: TestDatabase;
const started: FastifyInstance[] = [];
/** An instance on the test's database (a restart: a new process with the options given). */
async function instance(signingSecret: string, signingSecretFallbacks: string[] = []): Promise<FastifyInstance> {
  const app = await testApp({ databaseUrl: database.url, signingSecret, signingSecretFallbacks, metricsToken });
  started.push(app);
  return app;
}

beforeAll(async () => {
  database = await emulatorDatabase("rotation");
});
afterAll(async () => {
  for (const app of started) await app.close();
  await database?.drop();
});

const refresh = (app: FastifyInstance, refreshToken: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(refreshToken) });

async function fallbackUses(app: FastifyInstance): Promise<Record<string, number>> {
  const { body } = await call(app, "getMetrics", {
    method: "GET",
    url: "/_mock/v1/metrics",
    headers: bearer(metricsToken),
  });
  return Object.fromEntries(
    [...String(body).matchAll(/^appservices_fallback_token_uses_total\{type="(\w+)"\} (\d+)$/gm)].map((m) => [
      m[1]!,
      Number(m[2]),
    ]),
  );
}

describe("a rotation of the signing secret", () => {
  it("signs nobody out while the instances are restarted in turn, and says who still uses the old secret", async () => {
    // Before: two instances sign with the old secret; a user signed in on one.
    const before = await instance(oldSecret);
    const appId = await newApp(before, openData);
    const signedIn = await emailUser(before, appId, "ada@example.com");
    expect((await getProfile(before, signedIn.access_token)).response.statusCode).toBe(200);

    // First round: each instance in turn accepts the new secret too, still signing with the old.
    const acceptingNew = await instance(oldSecret, [newSecret]);
    // Second round: one instance signs with the new secret, accepting the old (the other one is
    // still of the first round).
    const signingNew = await instance(newSecret, [oldSecret]);
    expect((await getProfile(signingNew, signedIn.access_token)).response.statusCode).toBe(200);
    const refreshed = await refresh(signingNew, signedIn.refresh_token);
    expect(refreshed.response.statusCode).toBe(201);
    const newAccess = refreshed.body.access_token as string;
    // A token of the new secret works on the instance not restarted yet, which accepts it...
    expect((await getProfile(acceptingNew, newAccess)).response.statusCode).toBe(200);
    // ...unlike one of the old secret alone (skipping the first round signs users out meanwhile).
    const refused = await getProfile(before, newAccess);
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body).toMatchObject({ error: "unauthorized", error_code: "InvalidSession" });
    // A new sign-in on the rotated instance works on the other too, and so does its refresh token.
    const fresh = await emailUser(signingNew, appId, "grace@example.com");
    expect((await getProfile(acceptingNew, fresh.access_token)).response.statusCode).toBe(200);
    expect((await refresh(acceptingNew, fresh.refresh_token)).response.statusCode).toBe(201);

    // The rotated instance counts the old secret's tokens it accepted: one access, one refresh.
    expect(await fallbackUses(signingNew)).toEqual({ access: 1, refresh: 1 });
    expect(await fallbackUses(before)).toEqual({ access: 0, refresh: 0 });

    // Once the old secret is dropped, its tokens are refused; the new secret's work.
    const after = await instance(newSecret);
    const dropped = await refresh(after, signedIn.refresh_token);
    expect(dropped.response.statusCode).toBe(401);
    expect(dropped.body).toMatchObject({ error: "signature is invalid", error_code: "InvalidSession" });
    expect((await getProfile(after, signedIn.access_token)).response.statusCode).toBe(401);
    expect((await getProfile(after, newAccess)).response.statusCode).toBe(200);
    expect((await refresh(after, fresh.refresh_token)).response.statusCode).toBe(201);
    expect(await fallbackUses(after)).toEqual({ access: 0, refresh: 0 });
  });

  it("lets a browser sign-in begun before an instance's restart end after it", async () => {
    const before = await instance(oldSecret);
    const appId = await newApp(before);
    const begun = await call(before, "beginOAuthLogin", { method: "GET", url: beginUrl(appId, "oauth2-google") });
    expect(begun.response.statusCode).toBe(302);
    const state = new URL(location(begun.response)).searchParams.get("state")!;
    // The user cancels at the provider, which sends the browser back with the flow's state.
    const back = `${base}/auth/callback?${new URLSearchParams({ state, error: "access_denied" })}`;
    const rotated = await instance(newSecret, [oldSecret]);
    const ended = await call(rotated, "finishOAuthLogin", { method: "GET", url: back });
    expect(ended.response.statusCode).toBe(302);
    expect(location(ended.response).startsWith(`${webRedirect}#`)).toBe(true);
    expect(fragmentOf(location(ended.response))).toMatchObject({ _baas_state: "abcdefghijkl" });
    // Without the fallback the flow is not this service's any more: 400, no redirect.
    const after = await instance(newSecret);
    const refused = await call(after, "finishOAuthLogin", { method: "GET", url: back });
    expect(refused.response.statusCode).toBe(400);
    expect(refused.body).toMatchObject({
      error: "invalid OAuth 2.0 state: it was not made by this service",
      error_code: "BadRequest",
    });
  });
});
