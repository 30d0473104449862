/** EmailJS accounts through the control API: list, create (isolated, keys returned once), get, delete, clock. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { bothBefore, call, testApp } from "../helpers/app.ts";
import { mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const accounts = "/_mock/v1/emailjs/accounts";

describe("EmailJS accounts", () => {
  it("list the default account with the web app's templates, never a private key", async () => {
    const { response, body } = await call(app, "listEmailJsAccounts", { method: "GET", url: accounts });
    expect(response.statusCode).toBe(200);
    const local = body.accounts.find((a: { publicKey: string }) => a.publicKey === "local-public-key");
    expect(local).toMatchObject({
      requirePrivateKey: false,
      allowNonBrowser: false,
      rateLimitPerSecond: 1,
      defaultServiceId: "local_service",
      services: [{ id: "local_service", provider: "smtp" }],
    });
    expect(local.templates.map((t: { id: string }) => t.id)).toEqual(["local_template", "contact_form", "note_email"]);
    expect(JSON.stringify(body)).not.toMatch(/privateKey"|privateKeyHash/);
  });

  it("create a fresh account from the defaults, with a generated public key", async () => {
    const { response, body } = await call(app, "createEmailJsAccount", { method: "POST", url: accounts });
    expect(response.statusCode).toBe(201);
    expect(body.publicKey).toMatch(/^pk-/);
    expect(body).toMatchObject({
      rateLimitPerSecond: 1,
      allowNonBrowser: false,
      requirePrivateKey: false,
      defaultServiceId: "local_service",
    });
    expect(body).not.toHaveProperty("privateKey");
    expect(body.templates).toHaveLength(3);
  });

  it("return a required private key once, on creation only; it is never shown again", async () => {
    const created = await newAccount(app, { publicKey: "shop-key", requirePrivateKey: true });
    expect(created.privateKey).toMatch(/^sk-[0-9a-f]{24}$/);
    const { body } = await call(app, "getEmailJsAccount", { method: "GET", url: `${accounts}/shop-key` });
    expect(body).toMatchObject({ publicKey: "shop-key", requirePrivateKey: true });
    expect(body).not.toHaveProperty("privateKey");
    expect(body).not.toHaveProperty("privateKeyHash");
  });

  it("refuse a taken public key (409) and invalid settings (400), creating nothing", async () => {
    const before = (await call(app, "listEmailJsAccounts", { method: "GET", url: accounts })).body.accounts.length;
    const taken = await call(app, "createEmailJsAccount", {
      method: "POST",
      url: accounts,
      payload: { publicKey: "local-public-key" },
    });
    expect([taken.response.statusCode, taken.body.code]).toEqual([409, "Conflict"]);
    for (const payload of [
      { publicKey: "bad key!" },
      { privateKey: "short" },
      { rateLimitPerSecond: -1 },
      { unknown: true },
      { templates: [{ subject: "no id" }] },
    ]) {
      const { response, body } = await call(app, "createEmailJsAccount", { method: "POST", url: accounts, payload });
      expect([response.statusCode, body.code]).toEqual([400, "ValidationError"]);
    }
    expect((await call(app, "listEmailJsAccounts", { method: "GET", url: accounts })).body.accounts.length).toBe(
      before,
    );
  });

  it("are isolated: each has its own outbox and rate limit", async () => {
    const a = await newAccount(app, { rateLimitPerSecond: 1 });
    const b = await newAccount(app, { rateLimitPerSecond: 1 });
    const send = (publicKey: string) =>
      sendEmail(app, {
        user_id: publicKey,
        service_id: "local_service",
        template_id: "local_template",
        template_params: { to_email: "ann@example.com" },
      });
    expect((await send(a.publicKey)).response.statusCode).toBe(200);
    expect((await send(b.publicKey)).response.statusCode).toBe(200);
    expect(await mailOf(app, a.publicKey)).toHaveLength(1);
    expect(await mailOf(app, b.publicKey)).toHaveLength(1);
  });

  it("are deleted with their mail; then 404", async () => {
    const { publicKey } = await newAccount(app);
    await sendEmail(app, {
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: { to_email: "ann@example.com" },
    });
    const { response } = await call(app, "deleteEmailJsAccount", { method: "DELETE", url: `${accounts}/${publicKey}` });
    expect(response.statusCode).toBe(204);
    expect(await mailOf(app, publicKey)).toEqual([]);
    expect(
      (await call(app, "getEmailJsAccount", { method: "GET", url: `${accounts}/${publicKey}` })).response.statusCode,
    ).toBe(404);
    expect(
      (await call(app, "deleteEmailJsAccount", { method: "DELETE", url: `${accounts}/${publicKey}` })).response
        .statusCode,
    ).toBe(404);
    const send = await sendEmail(app, {
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
    });
    expect(send.response.statusCode).toBe(400);
  });

  it("answer the later of two racing deletions of one 404, as a moment later", async () => {
    const { publicKey } = await newAccount(app, {});
    bothBefore(app.emulator.emailjs, "delete");
    const both = await Promise.all(
      [1, 2].map(() =>
        call(app, "deleteEmailJsAccount", { method: "DELETE", url: `/_mock/v1/emailjs/accounts/${publicKey}` }),
      ),
    );
    vi.restoreAllMocks();
    expect(both.map(({ response }) => response.statusCode).sort()).toEqual([204, 404]);
  });

  it("have a clock that can be read and advanced (seconds), 400 for a negative move, 404 for no account", async () => {
    const { publicKey } = await newAccount(app);
    const clock = await call(app, "getEmailJsClock", { method: "GET", url: `${accounts}/${publicKey}/clock` });
    expect(clock.body.offsetMs).toBe(0);
    const moved = await call(app, "advanceEmailJsClock", {
      method: "POST",
      url: `${accounts}/${publicKey}/clock`,
      payload: { advanceBy: 90 },
    });
    expect(moved.response.statusCode).toBe(200);
    expect(moved.body.offsetMs).toBe(90_000);
    expect(moved.body.nowMs - Date.now()).toBeGreaterThan(80_000);
    const bad = await call(app, "advanceEmailJsClock", {
      method: "POST",
      url: `${accounts}/${publicKey}/clock`,
      payload: { advanceBy: -1 },
    });
    expect(bad.response.statusCode).toBe(400);
    expect(
      (await call(app, "getEmailJsClock", { method: "GET", url: `${accounts}/nope/clock` })).response.statusCode,
    ).toBe(404);
    expect(
      (
        await call(app, "advanceEmailJsClock", {
          method: "POST",
          url: `${accounts}/nope/clock`,
          payload: { advanceBy: 1 },
        })
      ).response.statusCode,
    ).toBe(404);
  });
});
