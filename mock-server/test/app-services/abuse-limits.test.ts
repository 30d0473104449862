import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { parseAuthRateLimit } from "../../src/app-services/abuse-limits.ts";
import { parseTrustProxy } from "../../src/http/host-check.ts";
import { base, call, newApp, testApp } from "../helpers/app.ts";

const login = (app: FastifyInstance, appId: string, username: string, password: string, remoteAddress: string) =>
  call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
    payload: { username, password },
    remoteAddress,
  });

const user = (app: FastifyInstance, appId: string, email: string) =>
  call(app, "createUser", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/users`,
    payload: { email, password: "correct horse" },
  });

describe("abuse limits (--auth-rate-limit)", () => {
  let app: FastifyInstance;
  afterEach(() => app.close());

  it("slows down 20 wrong passwords in a row with 429 and Retry-After; other users are not affected", async () => {
    app = await testApp({ authRateLimit: { max: 5, windowMs: 60_000 } });
    const appId = await newApp(app);
    await user(app, appId, "ada@example.com");
    await user(app, appId, "bob@example.com");
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      // From many addresses: the per-e-mail limit holds even when the attacker rotates addresses.
      const { response, body } = await login(app, appId, "ada@example.com", `guess ${i}`, `10.0.0.${i + 1}`);
      statuses.push(response.statusCode);
      if (response.statusCode === 429) {
        expect(body.error_code).toBe("TooManyRequests");
        expect(Number(response.headers["retry-after"])).toBeGreaterThan(0);
        expect(Number(response.headers["retry-after"])).toBeLessThanOrEqual(60);
      }
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5).every((s) => s === 429)).toBe(true);
    // Even the right password waits for the window: nothing is learned from a limited attempt.
    expect((await login(app, appId, "ada@example.com", "correct horse", "10.9.9.9")).response.statusCode).toBe(429);
    // Another user, from another address, signs in.
    expect((await login(app, appId, "bob@example.com", "correct horse", "10.1.1.1")).response.statusCode).toBe(200);
  });

  it("ends a window when the app's clock passes it (the harness's clock, moved by the control API)", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    const appId = await newApp(app);
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await login(app, appId, "ada@example.com", "x", "192.0.2.9")).response.statusCode);
    expect(statuses).toEqual([401, 401, 429]);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 50 },
    });
    const held = await login(app, appId, "ada@example.com", "x", "192.0.2.9");
    expect(held.response.statusCode).toBe(429);
    expect(Number(held.response.headers["retry-after"])).toBeLessThanOrEqual(10);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 10 },
    });
    expect((await login(app, appId, "ada@example.com", "x", "192.0.2.9")).response.statusCode).toBe(401);
  });

  it("starts a new window when the app's clock is put back behind one, however far it had gone", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    const appId = await newApp(app);
    const clock = `/_mock/v1/apps/${appId}/clock`;
    // Sixty days on: a window that ends sixty days after the real time.
    await call(app, "advanceClock", { method: "POST", url: clock, payload: { advanceBy: 60 * 24 * 3600 } });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await login(app, appId, "ada@example.com", "x", "192.0.2.9")).response.statusCode);
    expect(statuses).toEqual([401, 401, 429]);
    await call(app, "resetClock", { method: "DELETE", url: clock });
    statuses.length = 0;
    for (let i = 0; i < 3; i++) {
      const { response } = await login(app, appId, "ada@example.com", "x", "192.0.2.9");
      statuses.push(response.statusCode);
      if (response.statusCode === 429) expect(Number(response.headers["retry-after"])).toBeLessThanOrEqual(60);
    }
    expect(statuses).toEqual([401, 401, 429]);
  });

  it("forgets the app's windows when the app is reset, and no other app's", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    const appId = await newApp(app);
    const otherId = await newApp(app);
    const statuses = async (id: string) => {
      const answered = [];
      for (let i = 0; i < 3; i++)
        answered.push((await login(app, id, "ada@example.com", "x", "192.0.2.9")).response.statusCode);
      return answered;
    };
    expect(await statuses(appId)).toEqual([401, 401, 429]);
    expect(await statuses(otherId)).toEqual([401, 401, 429]);
    await call(app, "resetApp", { method: "POST", url: `/_mock/v1/apps/${appId}/reset` });
    expect(await statuses(appId)).toEqual([401, 401, 429]);
    expect(await statuses(otherId)).toEqual([429, 429, 429]);
  });

  it("forgets a deleted app's windows: an app made again with its id starts afresh", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    const create = () => call(app, "createApp", { method: "POST", url: "/_mock/v1/apps", payload: { appId: "again" } });
    const statuses = async () => {
      const answered = [];
      for (let i = 0; i < 3; i++)
        answered.push((await login(app, "again", "ada@example.com", "x", "192.0.2.9")).response.statusCode);
      return answered;
    };
    expect((await create()).response.statusCode).toBe(201);
    expect(await statuses()).toEqual([401, 401, 429]);
    await call(app, "deleteApp", { method: "DELETE", url: "/_mock/v1/apps/again" });
    expect((await create()).response.statusCode).toBe(201);
    expect(await statuses()).toEqual([401, 401, 429]);
  });

  it("limits one client address across e-mail addresses, and not other addresses", async () => {
    app = await testApp({ authRateLimit: { max: 3, windowMs: 60_000 } });
    const appId = await newApp(app);
    const statuses = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await login(app, appId, `user${i}@example.com`, "x", "192.0.2.7")).response.statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect((await login(app, appId, "user9@example.com", "x", "192.0.2.8")).response.statusCode).toBe(401);
  });

  it("covers register, confirmation resend and retry, reset e-mail and reset function", async () => {
    app = await testApp({ authRateLimit: { max: 1, windowMs: 60_000 } });
    const appId = await newApp(app);
    const provider = `${base}/app/${appId}/auth/providers/local-userpass`;
    const cases = [
      ["registerUser", "register", { email: "eve@example.com", password: "correct horse" }],
      ["resendConfirmationEmail", "confirm/send", { email: "eve@example.com" }],
      ["sendResetPasswordEmail", "reset/send", { email: "eve@example.com" }],
      ["callResetPasswordFunction", "reset/call", { email: "eve@example.com", password: "new horse", arguments: [] }],
      // (It runs the app's confirmation function and issues a token each time.)
      ["retryCustomConfirmation", "confirm/call", { email: "eve@example.com" }],
    ] as const;
    for (const [operationId, path, payload] of cases) {
      const first = await call(app, operationId, {
        method: "POST",
        url: `${provider}/${path}`,
        payload,
        remoteAddress: "198.51.100.1",
      });
      expect(first.response.statusCode, operationId).not.toBe(429);
      const second = await call(app, operationId, {
        method: "POST",
        url: `${provider}/${path}`,
        payload,
        remoteAddress: "198.51.100.2",
      });
      expect(second.response.statusCode, operationId).toBe(429);
    }
  });

  it("covers the links' confirm and reset (token guesses), per client address", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 } });
    const appId = await newApp(app);
    const provider = `${base}/app/${appId}/auth/providers/local-userpass`;
    const guess = { token: "a".repeat(128), tokenId: "65a1b2c3d4e5f60718293a4b" };
    const cases = [
      ["confirmUser", "confirm", guess],
      ["resetPassword", "reset", { ...guess, password: "new horse" }],
    ] as const;
    for (const [operationId, path, payload] of cases) {
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        const { response } = await call(app, operationId, {
          method: "POST",
          url: `${provider}/${path}`,
          payload,
          remoteAddress: "198.51.100.3",
        });
        statuses.push(response.statusCode);
      }
      expect(statuses, operationId).toEqual([400, 400, 429]);
      // Another address guesses on.
      const other = await call(app, operationId, {
        method: "POST",
        url: `${provider}/${path}`,
        payload,
        remoteAddress: "198.51.100.4",
      });
      expect(other.response.statusCode, operationId).toBe(400);
    }
  });

  it("covers an HTTPS endpoint's e-mail and password headers, and only requests that carry them", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 }, allowFunctionSource: true });
    const appId = await newApp(app, {
      dataApi: {},
      functions: {
        me: { source: "exports = () => context.user.id;" },
        open: { source: "exports = () => 1;", runAsSystem: true },
      },
      endpoints: [
        { route: "/me", httpMethod: "GET", functionName: "me", respondResult: true },
        { route: "/open", httpMethod: "GET", functionName: "open", respondResult: true },
      ],
    });
    await user(app, appId, "ada@example.com");
    const guess = (password: string, remoteAddress: string) =>
      call(app, "callEndpointGet", {
        method: "GET",
        url: `/app/${appId}/endpoint/me`,
        headers: { email: "ada@example.com", password },
        remoteAddress,
      });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await guess(`guess ${i}`, `10.2.0.${i + 1}`)).response.statusCode);
    expect(statuses).toEqual([401, 401, 429, 429]);
    // Through the Data API too: the same window.
    const viaDataApi = await call(app, "callDataApi", {
      method: "POST",
      url: `/app/${appId}/endpoint/data/v1/action/find`,
      headers: { email: "ada@example.com", password: "guess 9", "content-type": "application/json" },
      payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "d", collection: "c" }),
      remoteAddress: "10.2.0.9",
    });
    expect(viaDataApi.response.statusCode).toBe(429);
    // Guesses through an endpoint are logins: the e-mail address's window for logins is spent too.
    expect((await login(app, appId, "ada@example.com", "correct horse", "10.3.0.1")).response.statusCode).not.toBe(200);
    for (let i = 0; i < 4; i++) {
      const open = await call(app, "callEndpointGet", {
        method: "GET",
        url: `/app/${appId}/endpoint/open`,
        remoteAddress: "10.2.0.1",
      });
      expect(open.response.statusCode).toBe(200);
    }
  });

  it("covers an endpoint's and the Data API's apiKey header: its failed guesses per address, not a valid key", async () => {
    app = await testApp({ authRateLimit: { max: 2, windowMs: 60_000 }, allowFunctionSource: true });
    const appId = await newApp(app, {
      dataApi: {},
      functions: { me: { source: "exports = () => context.user.id;" } },
      endpoints: [{ route: "/me", httpMethod: "GET", functionName: "me", respondResult: true }],
      providers: { "api-key": { enabled: true }, "local-userpass": { enabled: true, autoConfirm: true } },
    });
    await user(app, appId, "ada@example.com");
    const signedIn = await login(app, appId, "ada@example.com", "correct horse", "10.4.0.1");
    const key = await call(app, "createApiKey", {
      method: "POST",
      url: `${base}/auth/api_keys`,
      headers: { authorization: `Bearer ${signedIn.body.refresh_token}` },
      payload: { name: "backend" },
    });
    const me = (apiKey: string, remoteAddress: string) =>
      call(app, "callEndpointGet", {
        method: "GET",
        url: `/app/${appId}/endpoint/me`,
        headers: { apiKey },
        remoteAddress,
      });
    // A backend with its key calls as often as it likes.
    for (let i = 0; i < 5; i++) expect((await me(key.body.key, "10.4.0.2")).response.statusCode).toBe(200);
    // Guesses from one address: two answered, then refused — a valid key from there too, and the
    // Data API's; another address goes on.
    const guessed = [];
    for (let i = 0; i < 3; i++) guessed.push((await me("f".repeat(63) + i, "10.4.0.3")).response.statusCode);
    expect(guessed).toEqual([401, 401, 429]);
    const refused = await me(key.body.key, "10.4.0.3");
    expect(refused.response.statusCode).toBe(429);
    expect(refused.body).toMatchObject({ error_code: "TooManyRequests" });
    expect(Number(refused.response.headers["retry-after"])).toBeGreaterThan(0);
    const viaDataApi = await call(app, "callDataApi", {
      method: "POST",
      url: `/app/${appId}/endpoint/data/v1/action/find`,
      headers: { apiKey: key.body.key, "content-type": "application/json" },
      payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "d", collection: "c" }),
      remoteAddress: "10.4.0.3",
    });
    expect(viaDataApi.response.statusCode).toBe(429);
    expect((await me(key.body.key, "10.4.0.4")).response.statusCode).toBe(200);
  });

  it("counts the client address from X-Forwarded-For only behind a trusted proxy", async () => {
    const forwarded = (client: string) => ({
      method: "POST" as const,
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: `${client}@example.com`, password: "x" },
      remoteAddress: "10.0.0.1",
      headers: { "x-forwarded-for": client },
    });
    app = await testApp({ authRateLimit: { max: 1, windowMs: 60_000 }, trustProxy: ["10.0.0.1"] });
    const appId = await newApp(app);
    expect((await call(app, "login", forwarded("192.0.2.1"))).response.statusCode).toBe(401);
    expect((await call(app, "login", forwarded("192.0.2.2"))).response.statusCode).toBe(401);
    expect((await call(app, "login", forwarded("192.0.2.1"))).response.statusCode).toBe(429);
  });

  it("is off by default (the harness)", async () => {
    app = await testApp();
    const appId = await newApp(app);
    for (let i = 0; i < 30; i++) {
      expect((await login(app, appId, "ada@example.com", "wrong", "127.0.0.1")).response.statusCode).toBe(401);
    }
  });
});

describe("option parsing", () => {
  it("reads MAX/WINDOW", () => {
    expect(parseAuthRateLimit("10/1m")).toEqual({ max: 10, windowMs: 60_000 });
    expect(parseAuthRateLimit("5/30s")).toEqual({ max: 5, windowMs: 30_000 });
    expect(parseAuthRateLimit("100/1h")).toEqual({ max: 100, windowMs: 3_600_000 });
    expect(parseAuthRateLimit("ten")).toMatch(/not MAX\/WINDOW/);
    expect(parseAuthRateLimit("0/1m")).toMatch(/at least 1/);
    expect(parseAuthRateLimit("5/2d")).toMatch(/not MAX\/WINDOW/);
  });

  it("reads --trust-proxy", () => {
    expect(parseTrustProxy("true")).toBe(true);
    expect(parseTrustProxy("2")).toBe(2);
    expect(parseTrustProxy("10.0.0.0/8, 127.0.0.1")).toEqual(["10.0.0.0/8", "127.0.0.1"]);
    expect(parseTrustProxy("10.0.0.0/33")).toMatch(/not true/);
    expect(parseTrustProxy("proxy.example")).toMatch(/not true/);
  });
});
