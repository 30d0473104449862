/** Fault overrides (MSW semantics: prepended, `times`, then gone) and request journals, for apps and EmailJS accounts. */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const location = (appId: string) => call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}/location` });
const addFault = (appId: string, payload: Record<string, unknown>) =>
  call(app, "addFault", { method: "POST", url: `/_mock/v1/apps/${appId}/faults`, payload });
const listFaults = async (appId: string) =>
  (await call(app, "listFaults", { method: "GET", url: `/_mock/v1/apps/${appId}/faults` })).body.faults as {
    id: string;
    remaining: number;
  }[];
const journal = async (appId: string, query = "") =>
  (await call(app, "listRequests", { method: "GET", url: `/_mock/v1/apps/${appId}/requests${query}` })).body
    .requests as Record<string, unknown>[];

describe("app faults", () => {
  it("fire exactly `times` times, then the operation runs normally", async () => {
    const appId = await newApp(app);
    // The status must be one the operation documents, or the contract check of the reply fails.
    const { response, body } = await addFault(appId, {
      operationId: "getLocation",
      status: 404,
      body: { error: "down", error_code: "AppNotFound" },
      times: 3,
    });
    expect(response.statusCode).toBe(201);
    expect(body).toMatchObject({ operationId: "getLocation", status: 404, times: 3, remaining: 3, delayMs: 0 });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { response: r, body: b } = await location(appId);
      statuses.push(r.statusCode);
      if (r.statusCode === 404) expect(b).toEqual({ error: "down", error_code: "AppNotFound" });
      if (i === 0) expect((await listFaults(appId))[0]?.remaining).toBe(2);
    }
    expect(statuses).toEqual([404, 404, 404, 200, 200]);
    expect(await listFaults(appId)).toEqual([]);
    const entries = await journal(appId);
    expect(entries.map((e) => [e.status, e.faulted])).toEqual([
      [404, true],
      [404, true],
      [404, true],
      [200, false],
      [200, false],
    ]);
  });

  it("are prepended: the newest override of an operation fires first", async () => {
    const appId = await newApp(app);
    await addFault(appId, { operationId: "getLocation", status: 404, body: { error: "older" } });
    await addFault(appId, { operationId: "getLocation", status: 404, body: { error: "newer" } });
    const faults = await listFaults(appId);
    expect(faults.map((f) => (f as { body?: { error: string } }).body?.error)).toEqual(["newer", "older"]);
    expect((await location(appId)).body).toEqual({ error: "newer" });
    expect((await location(appId)).body).toEqual({ error: "older" });
    expect((await location(appId)).response.statusCode).toBe(200);
  });

  it("without a status only delay the call, which then runs normally", async () => {
    const appId = await newApp(app);
    await addFault(appId, { operationId: "getLocation", delayMs: 40 });
    const started = performance.now();
    const { response } = await location(appId);
    expect(response.statusCode).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    expect(await listFaults(appId)).toEqual([]);
  });

  it("are scoped to one app and one operation, and cleared by clearFaults", async () => {
    const appId = await newApp(app);
    const other = await newApp(app);
    await addFault(appId, { operationId: "getLocation", status: 404, times: 10 });
    expect((await location(other)).response.statusCode).toBe(200);
    const { response } = await call(app, "clearFaults", { method: "DELETE", url: `/_mock/v1/apps/${appId}/faults` });
    expect(response.statusCode).toBe(204);
    expect(await listFaults(appId)).toEqual([]);
    expect((await location(appId)).response.statusCode).toBe(200);
  });

  it("must name an App Services operation (400), on an existing app (404)", async () => {
    const appId = await newApp(app);
    for (const operationId of ["getLocaton", "sendEmail", "listApps"]) {
      const { response, body } = await addFault(appId, { operationId, status: 500 });
      expect(response.statusCode).toBe(400);
      expect(body.code).toBe("ValidationError");
    }
    expect((await addFault(appId, { operationId: "getLocation", status: 99 })).response.statusCode).toBe(400);
    expect((await addFault(appId, { operationId: "getLocation", times: 0 })).response.statusCode).toBe(400);
    expect((await addFault("no-such-app", { operationId: "getLocation" })).response.statusCode).toBe(404);
    expect(
      (await call(app, "listFaults", { method: "GET", url: "/_mock/v1/apps/no-such-app/faults" })).response.statusCode,
    ).toBe(404);
    expect(
      (await call(app, "clearFaults", { method: "DELETE", url: "/_mock/v1/apps/no-such-app/faults" })).response
        .statusCode,
    ).toBe(404);
    expect(await listFaults(appId)).toEqual([]);
  });
});

describe("app journal", () => {
  it("records every request with secrets redacted, filtered by operation and status, and can be emptied", async () => {
    const appId = await newApp(app);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ada@example.com", password: "correct horse" },
    });
    const login = (password: string) =>
      call(app, "login", {
        method: "POST",
        url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
        payload: { username: "ada@example.com", password },
      });
    await login("wrong password");
    const { body: session } = await login("correct horse");
    await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: { authorization: `Bearer ${session.access_token}` },
    });
    await location(appId);

    const all = await journal(appId);
    expect(all.map((e) => [e.operationId, e.status])).toEqual([
      ["login", 401],
      ["login", 200],
      ["getProfile", 200],
      ["getLocation", 200],
    ]);
    for (const entry of all) {
      expect(entry).toMatchObject({ method: expect.any(String), path: expect.any(String), faulted: false });
      expect(typeof entry.durationMs).toBe("number");
    }
    expect(all[0]?.requestBody).toEqual({ username: "ada@example.com", password: "[redacted]" });
    expect(JSON.stringify(all)).not.toContain("correct horse");
    expect(JSON.stringify(all)).not.toContain(session.access_token);

    expect((await journal(appId, "?operationId=login")).map((e) => e.status)).toEqual([401, 200]);
    expect((await journal(appId, "?operationId=login&status=401")).length).toBe(1);
    expect((await journal(appId, "?limit=1")).map((e) => e.operationId)).toEqual(["getLocation"]);
    expect(
      (await call(app, "listRequests", { method: "GET", url: `/_mock/v1/apps/${appId}/requests?status=42` })).response
        .statusCode,
    ).toBe(400);

    const { response } = await call(app, "clearRequests", {
      method: "DELETE",
      url: `/_mock/v1/apps/${appId}/requests`,
    });
    expect(response.statusCode).toBe(204);
    expect(await journal(appId)).toEqual([]);
    expect(
      (await call(app, "clearRequests", { method: "DELETE", url: "/_mock/v1/apps/nope/requests" })).response.statusCode,
    ).toBe(404);
  });
});

describe("app journal bodies", () => {
  it("keeps a body as it was sent, and holds no secret even before it is read (a key spelt with an escape too)", async () => {
    const appId = await newApp(app);
    await call(app, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ada@example.com", password: "correct horse" },
    });
    // `pass\u0077ord` is `password` once parsed: the service reads it, the journal must redact it.
    const { response } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      headers: { "content-type": "application/json" },
      payload: '{"username":"ada@example.com","pass\\u0077ord":"correct horse"}',
    });
    expect(response.statusCode).toBe(200);
    const device = { options: { device: { appId: "journal-test", platform: "node", sdkVersion: "2.0.1" } } };
    await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      payload: device,
    });
    // What the journal holds before anyone lists it (the ring's slots and its bytes): no password,
    // in any form.
    const runtime = await app.emulator.apps.get(appId);
    const held = runtime!.journal as unknown as {
      entries: unknown[];
      segments: Map<number, { bytes: Buffer; used: number }>;
    };
    const bytes = Buffer.concat([...held.segments.values()].map((s) => s.bytes.subarray(0, s.used))).toString();
    expect(held.entries).toHaveLength(2);
    expect(JSON.stringify(held.entries)).not.toContain("correct horse");
    expect(bytes).not.toContain("correct horse");
    // A body naming no secret is kept as its text, in the journal's bytes (no copy made on the
    // request's path, no object of it held).
    expect(held.entries[1]).toBeNull();
    expect(bytes).toContain(JSON.stringify(device));

    const [userpass, anonymous] = await journal(appId);
    expect(userpass?.requestBody).toEqual({ username: "ada@example.com", password: "[redacted]" });
    expect(anonymous?.requestBody).toEqual(device);
  });

  it("lists a body sent with a byte order mark, which the server read, as its JSON", async () => {
    const appId = await newApp(app);
    const { response } = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/anon-user/login`,
      headers: { "content-type": "application/json" },
      payload: '\uFEFF{"options":{"device":{"platform":"bom"}}}',
    });
    expect(response.statusCode).toBe(200);
    const listed = await call(app, "listRequests", { method: "GET", url: `/_mock/v1/apps/${appId}/requests` });
    expect(listed.response.statusCode).toBe(200);
    expect(listed.body.requests[0].requestBody).toEqual({ options: { device: { platform: "bom" } } });
  });
});

describe("EmailJS account faults and journal", () => {
  const params = { to_email: "ann@example.com", message: "Hi" };
  const payload = (publicKey: string, extra: Record<string, unknown> = {}) => ({
    user_id: publicKey,
    service_id: "local_service",
    template_id: "local_template",
    template_params: params,
    ...extra,
  });
  const addEmailJsFault = (publicKey: string, body: Record<string, unknown>) =>
    call(app, "addEmailJsFault", {
      method: "POST",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
      payload: body,
    });

  it("fire exactly `times` times with a text body, for the named operation only, before any other check", async () => {
    const { publicKey } = await newAccount(app);
    const { response } = await addEmailJsFault(publicKey, {
      operationId: "sendEmail",
      status: 412,
      body: "Gmail_API: Request had insufficient authentication scopes.",
      times: 2,
    });
    expect(response.statusCode).toBe(201);
    const replies: [number, string][] = [];
    for (let i = 0; i < 3; i++) {
      // The fault answers even a caller the account would refuse (it replaces the operation).
      const r = (await sendEmail(app, payload(publicKey), i === 0 ? {} : undefined)).response;
      replies.push([r.statusCode, r.body]);
    }
    expect(replies).toEqual([
      [412, "Gmail_API: Request had insufficient authentication scopes."],
      [412, "Gmail_API: Request had insufficient authentication scopes."],
      [200, "OK"],
    ]);
    const { body } = await call(app, "listEmailJsRequests", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/requests`,
    });
    expect(body.requests.map((e: { status: number; faulted: boolean }) => [e.status, e.faulted])).toEqual([
      [412, true],
      [412, true],
      [200, false],
    ]);
    const mail = await call(app, "listMail", { method: "GET", url: `/_mock/v1/mail?account=${publicKey}` });
    expect(mail.body.messages).toHaveLength(1);
  });

  it("default to a generic text, can only delay, and are listed and cleared", async () => {
    const { publicKey } = await newAccount(app);
    await addEmailJsFault(publicKey, { operationId: "sendEmail", status: 412 });
    await addEmailJsFault(publicKey, { operationId: "sendForm", status: 412 });
    const listed = await call(app, "listEmailJsFaults", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
    });
    expect(listed.body.faults.map((f: { operationId: string }) => f.operationId)).toEqual(["sendForm", "sendEmail"]);
    const r = (await sendEmail(app, payload(publicKey))).response;
    expect([r.statusCode, r.body]).toEqual([412, "fault injected for sendEmail"]);
    const cleared = await call(app, "clearEmailJsFaults", {
      method: "DELETE",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
    });
    expect(cleared.response.statusCode).toBe(204);
    await addEmailJsFault(publicKey, { operationId: "sendEmail", delayMs: 30 });
    const started = performance.now();
    expect((await sendEmail(app, payload(publicKey))).response.statusCode).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });

  it("must name an EmailJS operation and give a text body; the account must exist", async () => {
    const { publicKey } = await newAccount(app);
    for (const body of [
      { operationId: "getLocation", status: 500 },
      { operationId: "sendEmail", status: 500, body: { error: "x" } },
    ]) {
      const { response, body: reply } = await addEmailJsFault(publicKey, body);
      expect([response.statusCode, reply.code]).toEqual([400, "ValidationError"]);
    }
    expect((await addEmailJsFault("no-such-key", { operationId: "sendEmail" })).response.statusCode).toBe(404);
    expect(
      (await call(app, "listEmailJsFaults", { method: "GET", url: "/_mock/v1/emailjs/accounts/no-such-key/faults" }))
        .response.statusCode,
    ).toBe(404);
    expect(
      (
        await call(app, "clearEmailJsFaults", {
          method: "DELETE",
          url: "/_mock/v1/emailjs/accounts/no-such-key/faults",
        })
      ).response.statusCode,
    ).toBe(404);
    expect(
      (
        await call(app, "listEmailJsRequests", {
          method: "GET",
          url: "/_mock/v1/emailjs/accounts/no-such-key/requests",
        })
      ).response.statusCode,
    ).toBe(404);
  });

  it("journal the account's requests with the private key and other secrets redacted", async () => {
    const { publicKey, privateKey } = await newAccount(app, {
      requirePrivateKey: true,
      privateKey: "my-private-key-123",
    });
    expect(privateKey).toBe("my-private-key-123");
    await sendEmail(app, payload(publicKey, { accessToken: "wrong-key-456" }));
    await sendEmail(
      app,
      payload(publicKey, { accessToken: privateKey, template_params: { ...params, password: "hunter2" } }),
    );
    const { body } = await call(app, "listEmailJsRequests", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/requests`,
    });
    expect(body.requests.map((e: { status: number }) => e.status)).toEqual([403, 200]);
    expect(body.requests[1].requestBody).toMatchObject({
      user_id: publicKey,
      accessToken: "[redacted]",
      template_params: { to_email: "ann@example.com", password: "[redacted]" },
    });
    const text = JSON.stringify(body);
    expect(text).not.toContain("my-private-key-123");
    expect(text).not.toContain("wrong-key-456");
    expect(text).not.toContain("hunter2");
    const filtered = await call(app, "listEmailJsRequests", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/requests?status=403`,
    });
    expect(filtered.body.requests).toHaveLength(1);
    // A request whose public key names no account belongs to no journal.
    await sendEmail(app, payload("no-such-key"));
  });
});

describe("request journals in production mode", () => {
  /** An app with anonymous login on a production server, a call of its profile, and what its journal holds. */
  async function journalAfterCalls(controlToken: string | null): Promise<number> {
    const server = await testApp({
      production: true,
      controlToken,
      signingSecret: "a-test-signing-secret-of-32-chars",
    });
    try {
      const runtime = await server.emulator.apps.create({ appId: `journal-${controlToken ? "token" : "none"}` });
      const login = await call(server, "login", {
        method: "POST",
        url: `${base}/app/${runtime.appId}/auth/providers/anon-user/login`,
        payload: {},
      });
      expect(login.response.statusCode).toBe(200);
      const profile = await call(server, "getProfile", {
        method: "GET",
        url: `${base}/auth/profile`,
        headers: { authorization: `Bearer ${login.body.access_token}` },
      });
      expect(profile.response.statusCode).toBe(200);
      return runtime.journal.list().length;
    } finally {
      await server.close();
    }
  }

  it("are kept with a control token (the control API reads them), and not at all without one (nothing can)", async () => {
    expect(await journalAfterCalls("a-production-control-token")).toBe(2);
    expect(await journalAfterCalls(null)).toBe(0);
  });
});
