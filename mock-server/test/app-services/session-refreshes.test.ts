/**
 * How often one session may refresh its access token (production): each refresh reads the session,
 * its user and their custom user data from the store, so a client refreshing in a loop would put
 * them on the database every instance shares without end; realm-web refreshes when an access token
 * expires (30 minutes) or is refused, a few times at most.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { refreshesPerSessionPerMinute } from "../../src/runtime/session-refreshes.ts";
import { anonymousLogin, base, bearer, call, testApp } from "../helpers/app.ts";

const controlToken = "session-refreshes-control-token";

async function appWithGuests(app: FastifyInstance, token?: string): Promise<string> {
  const { body } = await call(app, "createApp", {
    method: "POST",
    url: "/_mock/v1/apps",
    headers: token ? bearer(token) : {},
    payload: { config: { providers: { "anon-user": { enabled: true } } } },
  });
  return body.appId as string;
}

const refresh = (app: FastifyInstance, refreshToken: string) =>
  call(app, "refreshAccessToken", { method: "POST", url: `${base}/auth/session`, headers: bearer(refreshToken) });

describe("a session's refreshes, in production", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp({ production: true, controlToken });
  });
  afterAll(() => app.close());

  it("are refused past so many a minute, for that session alone; a logout still ends it", async () => {
    const appId = await appWithGuests(app, controlToken);
    const looping = await anonymousLogin(app, appId);
    const other = await anonymousLogin(app, appId);
    for (let i = 0; i < refreshesPerSessionPerMinute; i++)
      expect((await refresh(app, looping.refresh_token)).response.statusCode).toBe(201);
    const refused = await refresh(app, looping.refresh_token);
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject({
      error: `too many refreshes: one session may refresh its access token ${refreshesPerSessionPerMinute} times a minute`,
      error_code: "TooManyRequests",
    });
    expect(Number(refused.response.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(refused.response.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect((await refresh(app, other.refresh_token)).response.statusCode).toBe(201);
    const ended = await call(app, "logOut", {
      method: "DELETE",
      url: `${base}/auth/session`,
      headers: bearer(looping.refresh_token),
    });
    expect(ended.response.statusCode).toBe(204);
  });
});

describe("a session's refreshes, in the harness", () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await testApp();
  });
  afterAll(() => app.close());

  it("are not counted", async () => {
    const appId = await appWithGuests(app);
    const session = await anonymousLogin(app, appId);
    for (let i = 0; i <= refreshesPerSessionPerMinute; i++)
      expect((await refresh(app, session.refresh_token)).response.statusCode).toBe(201);
  });
});
