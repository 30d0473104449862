/**
 * Registrations a day per client address, and confirmation and reset mails an hour per recipient
 * (config `limits.registrationsPerAddress`, `limits.mailsPerRecipientPerHour`;
 * docs/decisions/0018-fair-shares.md): a client cannot fill the app's users with pending
 * registrations, nor make the app mail one address without end, whatever addresses it sends from.
 * Counted by every instance together on PostgreSQL.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, expectWindowRefusal, newApp, secondInstance, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(() => app.close());

const userpass = (appId: string, path: string) => `${base}/app/${appId}/auth/providers/local-userpass/${path}`;

const register = (appId: string, email: string, remoteAddress: string, on = app) =>
  call(on, "registerUser", {
    method: "POST",
    url: userpass(appId, "register"),
    payload: { email, password: "correct horse" },
    remoteAddress,
  });
const resend = (appId: string, email: string, remoteAddress: string, on = app) =>
  call(on, "resendConfirmationEmail", {
    method: "POST",
    url: userpass(appId, "confirm/send"),
    payload: { email },
    remoteAddress,
  });
const sendReset = (appId: string, email: string, remoteAddress: string) =>
  call(app, "sendResetPasswordEmail", {
    method: "POST",
    url: userpass(appId, "reset/send"),
    payload: { email },
    remoteAddress,
  });

const mailTo = (appId: string, to: string) => app.emulator.store.mail.list({ appId, to });
const tokensOf = async (appId: string, email: string, kind: "confirm" | "reset") =>
  (
    await call(app, "listAuthTokens", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/auth/tokens?email=${encodeURIComponent(email)}&kind=${kind}`,
    })
  ).body.tokens as unknown[];
const registrations = async (appId: string) =>
  (
    (await call(app, "listUsers", { method: "GET", url: `/_mock/v1/apps/${appId}/users` })).body.users as {
      email: string;
      status: string;
    }[]
  ).filter((user) => user.status === "pending");

describe("where they count by default", () => {
  it("in production; in the harness only as the app's config sets them", async () => {
    const harnessApp = await newApp(app);
    const production = await testApp({ production: true, controlToken: "control-token-of-the-test" });
    try {
      const created = await call(production, "createApp", {
        method: "POST",
        url: "/_mock/v1/apps",
        headers: { authorization: "Bearer control-token-of-the-test" },
        payload: { config: { providers: { "local-userpass": { enabled: true } } } },
      });
      const productionApp = created.body.appId as string;
      // One registration and its five resends: six mails to one address in an hour.
      const sixMails = async (appId: string, on: FastifyInstance) => {
        const statuses = [(await register(appId, "many@example.com", "192.0.2.1", on)).response.statusCode];
        for (let i = 0; i < 5; i++)
          statuses.push((await resend(appId, "many@example.com", "192.0.2.1", on)).response.statusCode);
        return statuses;
      };
      expect(await sixMails(harnessApp, app)).toEqual([201, 200, 200, 200, 200, 200]);
      expect(await sixMails(productionApp, production)).toEqual([201, 200, 200, 200, 200, 429]);
      // A developer's hundred and first registration of the day from one address goes through.
      for (let i = 0; i < 101; i++) {
        const registered = await register(harnessApp, `dev-${i}@example.com`, "192.0.2.2");
        expect(registered.response.statusCode).toBe(201);
      }
    } finally {
      await production.close();
    }
  });
});

describe("registrations per address", () => {
  it("refuses a client address's registrations past its day's (429, Retry-After); other addresses go on", async () => {
    const appId = await newApp(app, { limits: { registrationsPerAddress: 3 } });
    // Counted by every instance together (with PostgreSQL: two instances on one database).
    const { other, close } = await secondInstance(app);
    try {
      for (let i = 0; i < 3; i++)
        expect((await register(appId, `r${i}@example.com`, "10.2.0.1", i % 2 ? other : app)).response.statusCode).toBe(
          201,
        );
      expect((await register(appId, "r3@example.com", "10.2.0.1", other)).response.statusCode).toBe(429);
    } finally {
      await close();
    }
    expectWindowRefusal(
      await register(appId, "r4@example.com", "10.2.0.1"),
      "too many registrations: one address may register 3 a day",
      86_400,
    );
    // Nothing of the refused ones was kept or sent.
    expect(await mailTo(appId, "r4@example.com")).toHaveLength(0);
    expect((await registrations(appId)).map((r) => r.email).sort()).toEqual([
      "r0@example.com",
      "r1@example.com",
      "r2@example.com",
    ]);
    // Another address registers.
    expect((await register(appId, "r4@example.com", "10.2.0.2")).response.statusCode).toBe(201);
  });
});

describe("windows by the app's clock", () => {
  const advance = (appId: string, seconds: number) =>
    call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: seconds },
    });

  it("ends a window when the app's clock passes it, Retry-After counting by that clock", async () => {
    const appId = await newApp(app, { limits: { registrationsPerAddress: 1 } });
    expect((await register(appId, "w0@example.com", "10.5.0.1")).response.statusCode).toBe(201);
    expectWindowRefusal(
      await register(appId, "w1@example.com", "10.5.0.1"),
      "too many registrations: one address may register 1 a day",
      86_400,
    );
    await advance(appId, 86_000);
    // 400 s of the day left by the app's clock (a few more may have passed in real time).
    expectWindowRefusal(
      await register(appId, "w1@example.com", "10.5.0.1"),
      "too many registrations: one address may register 1 a day",
      400,
    );
    await advance(appId, 400);
    expect((await register(appId, "w1@example.com", "10.5.0.1")).response.statusCode).toBe(201);
  });
});

describe("mails per recipient", () => {
  it("sends one address at most its hour's confirmation mails, whoever asks; then 429 and nothing sent", async () => {
    const appId = await newApp(app, { limits: { mailsPerRecipientPerHour: 3 } });
    expect((await register(appId, "ada@example.com", "10.3.0.1")).response.statusCode).toBe(201);
    for (const from of ["10.3.0.2", "10.3.0.3"])
      expect((await resend(appId, "ada@example.com", from)).response.statusCode).toBe(200);
    expectWindowRefusal(
      await resend(appId, "ADA@example.com ", "10.3.0.4"),
      "too many e-mails: one address may be sent 3 an hour",
      3600,
    );
    expect(await mailTo(appId, "ada@example.com")).toHaveLength(3);
    expect(await tokensOf(appId, "ada@example.com", "confirm")).toHaveLength(3);
    // Another recipient is not held to it.
    expect((await register(appId, "bob@example.com", "10.3.0.4")).response.statusCode).toBe(201);
  });

  it("counts reset mails with them, and refuses a registration whose mail could not be sent", async () => {
    const appId = await newApp(app, { limits: { mailsPerRecipientPerHour: 2 } });
    const { body: user } = await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "eve@example.com", password: "correct horse" },
    });
    for (const from of ["10.4.0.1", "10.4.0.2"])
      expect((await sendReset(appId, "eve@example.com", from)).response.statusCode).toBe(200);
    const refused = await sendReset(appId, "eve@example.com", "10.4.0.3");
    expect(refused.response.statusCode).toBe(429);
    expect(await tokensOf(appId, "eve@example.com", "reset")).toHaveLength(2);
    // The address, free again, may not be registered (and mailed) within the hour: nothing is kept.
    await call(app, "removeUser", { method: "DELETE", url: `/_mock/v1/apps/${appId}/users/${user.id}` });
    const registration = await register(appId, "eve@example.com", "10.4.0.4");
    expect(registration.response.statusCode).toBe(429);
    expect(registration.body.error).toBe("too many e-mails: one address may be sent 2 an hour");
    expect(await registrations(appId)).toEqual([]);
    expect(await mailTo(appId, "eve@example.com")).toHaveLength(2);
  });
});
