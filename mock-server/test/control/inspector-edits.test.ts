/**
 * What the inspector changes besides data and mail: faults removed one by one and matched on the
 * function (or `mongodb-atlas` action) callFunction runs, clocks back on real time, journals with
 * the reply (status, redacted body, error code), searched and cleared. Per instance: memory only.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { journaledBodyLimit } from "../../src/state/journal.ts";
import { anonymousLogin, base, bearer, call, mongoAction, newOpenApp as newApp, testApp } from "../helpers/app.ts";
import { newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const addFault = (appId: string, payload: Record<string, unknown>) =>
  call(app, "addFault", { method: "POST", url: `/_mock/v1/apps/${appId}/faults`, payload });
const listFaults = async (appId: string) =>
  (await call(app, "listFaults", { method: "GET", url: `/_mock/v1/apps/${appId}/faults` })).body.faults as {
    id: string;
    functionName?: string;
  }[];
const journal = async (appId: string, query = "") =>
  (await call(app, "listRequests", { method: "GET", url: `/_mock/v1/apps/${appId}/requests${query}` })).body
    .requests as Record<string, unknown>[];
const note = { database: "db", collection: "notes" };
const mongoFailure = { error: "insert refused by a fault", error_code: "MongoDBError" };

describe("deleteFault", () => {
  it("removes one fault and leaves the others as they were", async () => {
    const appId = await newApp(app);
    const older = (await addFault(appId, { operationId: "getLocation", status: 404, times: 3 })).body;
    const newer = (await addFault(appId, { operationId: "login", status: 400 })).body;
    const { response } = await call(app, "deleteFault", {
      method: "DELETE",
      url: `/_mock/v1/apps/${appId}/faults/${newer.id}`,
    });
    expect(response.statusCode).toBe(204);
    expect(await listFaults(appId)).toEqual([older]);
    for (const url of [`/_mock/v1/apps/${appId}/faults/${newer.id}`, `/_mock/v1/apps/no-such-app/faults/${older.id}`]) {
      const again = await call(app, "deleteFault", { method: "DELETE", url });
      expect([again.response.statusCode, again.body.code]).toEqual([404, "NotFound"]);
    }
    expect(await listFaults(appId)).toHaveLength(1);
  });

  it("removes one EmailJS fault", async () => {
    const { publicKey } = await newAccount(app);
    const fault = await call(app, "addEmailJsFault", {
      method: "POST",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
      payload: { operationId: "sendEmail", status: 412 },
    });
    const url = `/_mock/v1/emailjs/accounts/${publicKey}/faults/${fault.body.id}`;
    expect((await call(app, "deleteEmailJsFault", { method: "DELETE", url })).response.statusCode).toBe(204);
    const listed = await call(app, "listEmailJsFaults", {
      method: "GET",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
    });
    expect(listed.body.faults).toEqual([]);
    expect((await call(app, "deleteEmailJsFault", { method: "DELETE", url })).response.statusCode).toBe(404);
  });
});

describe("faults of one function", () => {
  it("fire for the named mongodb-atlas action only: insertOne fails, find works", async () => {
    const appId = await newApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    const { response, body: fault } = await addFault(appId, {
      operationId: "callFunction",
      functionName: "insertOne",
      status: 400,
      body: mongoFailure,
      times: 2,
    });
    expect(response.statusCode).toBe(201);
    expect(fault).toMatchObject({ operationId: "callFunction", functionName: "insertOne", remaining: 2 });

    const found = await mongoAction(app, appId, access_token, "find", { ...note, query: {} });
    expect(found.response.statusCode).toBe(200);
    const inserted = await mongoAction(app, appId, access_token, "insertOne", { ...note, document: { title: "a" } });
    expect([inserted.response.statusCode, inserted.body]).toEqual([400, mongoFailure]);
    expect((await listFaults(appId))[0]).toMatchObject({ remaining: 1 });
    // An app function of another name runs.
    const sum = await call(app, "callFunction", {
      method: "POST",
      url: `${base}/app/${appId}/functions/call`,
      headers: bearer(access_token),
      payload: { name: "sum", arguments: [1, 2] },
    });
    expect(sum.response.statusCode).toBe(200);
    expect(
      (await mongoAction(app, appId, access_token, "insertOne", { ...note, document: {} })).response.statusCode,
    ).toBe(400);
    expect(
      (await mongoAction(app, appId, access_token, "insertOne", { ...note, document: {} })).response.statusCode,
    ).toBe(200);
    const entries = await journal(appId, "?operationId=callFunction");
    expect(entries.map((e) => [e.status, e.faulted, e.errorCode ?? null])).toEqual([
      [200, false, null],
      [400, true, "MongoDBError"],
      [200, false, null],
      [400, true, "MongoDBError"],
      [200, false, null],
    ]);
  });

  it("keep MSW order with the operation's other faults: the newest fires first", async () => {
    const appId = await newApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    await addFault(appId, { operationId: "callFunction", functionName: "find", status: 400, body: { error: "named" } });
    await addFault(appId, { operationId: "callFunction", status: 400, body: { error: "any" } });
    const first = await mongoAction(app, appId, access_token, "find", { ...note, query: {} });
    expect(first.body).toEqual({ error: "any" });
    const second = await mongoAction(app, appId, access_token, "find", { ...note, query: {} });
    expect(second.body).toEqual({ error: "named" });
  });

  it("can only be set on callFunction (400 otherwise, EmailJS included)", async () => {
    const appId = await newApp(app);
    const refused = await addFault(appId, { operationId: "login", functionName: "insertOne", status: 400 });
    expect([refused.response.statusCode, refused.body.code]).toEqual([400, "ValidationError"]);
    const empty = await addFault(appId, { operationId: "callFunction", functionName: "", status: 400 });
    expect(empty.response.statusCode).toBe(400);
    const { publicKey } = await newAccount(app);
    const emailJs = await call(app, "addEmailJsFault", {
      method: "POST",
      url: `/_mock/v1/emailjs/accounts/${publicKey}/faults`,
      payload: { operationId: "sendEmail", functionName: "insertOne", status: 412 },
    });
    expect(emailJs.response.statusCode).toBe(400);
    expect(await listFaults(appId)).toEqual([]);
  });
});

describe("resetClock", () => {
  it("puts an app's and an account's clock back on real time", async () => {
    const appId = await newApp(app);
    await call(app, "advanceClock", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/clock`,
      payload: { advanceBy: 3600 },
    });
    const before = Date.now();
    const { response, body } = await call(app, "resetClock", {
      method: "DELETE",
      url: `/_mock/v1/apps/${appId}/clock`,
    });
    expect(response.statusCode).toBe(200);
    expect(body.offsetMs).toBe(0);
    expect(body.nowMs).toBeGreaterThanOrEqual(before);
    expect(body.nowMs).toBeLessThan(before + 3_600_000);
    expect(
      (await call(app, "resetClock", { method: "DELETE", url: "/_mock/v1/apps/nope/clock" })).response.statusCode,
    ).toBe(404);

    const { publicKey } = await newAccount(app);
    const clock = `/_mock/v1/emailjs/accounts/${publicKey}/clock`;
    await call(app, "advanceEmailJsClock", { method: "POST", url: clock, payload: { advanceBy: 5 } });
    const reset = await call(app, "resetEmailJsClock", { method: "DELETE", url: clock });
    expect([reset.response.statusCode, reset.body.offsetMs]).toEqual([200, 0]);
    expect((await call(app, "getEmailJsClock", { method: "GET", url: clock })).body.offsetMs).toBe(0);
  });
});

describe("the journal's replies", () => {
  it("keeps each reply's body with tokens and keys redacted, and its error code", async () => {
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
    const failed = await login("wrong password");
    const { body: session } = await login("correct horse");
    const key = await call(app, "createApiKey", {
      method: "POST",
      url: `${base}/auth/api_keys`,
      headers: bearer(session.refresh_token),
      payload: { name: "ci" },
    });
    expect(key.response.statusCode).toBe(201);

    const [refused, loggedIn, created] = await journal(appId);
    expect(refused).toMatchObject({ status: 401, errorCode: failed.body.error_code, responseBody: failed.body });
    expect(loggedIn?.responseBody).toMatchObject({
      access_token: "[redacted]",
      refresh_token: "[redacted]",
      user_id: session.user_id,
    });
    expect(loggedIn).not.toHaveProperty("errorCode");
    expect(created?.responseBody).toMatchObject({ _id: key.body._id, name: "ci", key: "[redacted]" });
    const text = JSON.stringify(await journal(appId));
    for (const secret of [session.access_token, session.refresh_token, key.body.key, "correct horse"]) {
      expect(text).not.toContain(secret);
    }
  });

  it("keeps a note of the size of a large reply, and nothing of an empty one", async () => {
    const appId = await newApp(app);
    const { access_token, refresh_token } = await anonymousLogin(app, appId);
    const big = "x".repeat(journaledBodyLimit + 1);
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/db/notes`,
      payload: { documents: [{ big }] },
    });
    await mongoAction(app, appId, access_token, "find", { ...note, query: {} });
    const loggedOut = await call(app, "logOut", {
      method: "DELETE",
      url: `${base}/auth/session`,
      headers: bearer(refresh_token),
    });
    expect(loggedOut.response.statusCode).toBe(204);
    const entries = await journal(appId);
    const find = entries.find((e) => e.operationId === "callFunction");
    expect(find?.responseBody).toMatch(/^\[a body of \d+ bytes, not kept\]$/);
    const logout = entries.find((e) => e.operationId === "logOut");
    expect(logout).toBeDefined();
    expect(logout).not.toHaveProperty("responseBody");
  });

  it("finds entries by a text of their path, operation, error code or bodies, in any case", async () => {
    const appId = await newApp(app);
    const location = () => call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}/location` });
    await location();
    await call(app, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "grace@example.com", password: "x" },
    });
    const ops = async (search: string) =>
      (await journal(appId, `?search=${encodeURIComponent(search)}`)).map((e) => e.operationId);
    expect(await ops("GRACE@")).toEqual(["login"]);
    expect(await ops("invalidpassword")).toEqual(["login"]);
    expect(await ops("/location")).toEqual(["getLocation"]);
    expect(await ops("hostname")).toEqual(["getLocation"]);
    expect(await ops("no such text")).toEqual([]);
    // The redacted password cannot be searched for.
    expect(await ops('"x"')).toEqual([]);
  });

  it("records EmailJS replies (text) and can be cleared per account", async () => {
    const { publicKey } = await newAccount(app);
    await sendEmail(app, {
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: { to_email: "ann@example.com", message: "Hi" },
    });
    await sendEmail(app, { user_id: publicKey, service_id: "local_service", template_id: "nope" });
    const url = `/_mock/v1/emailjs/accounts/${publicKey}/requests`;
    const { body } = await call(app, "listEmailJsRequests", { method: "GET", url });
    expect(body.requests.map((e: { status: number; responseBody: unknown }) => [e.status, e.responseBody])).toEqual([
      [200, "OK"],
      [400, expect.stringContaining("template")],
    ]);
    const searched = await call(app, "listEmailJsRequests", { method: "GET", url: `${url}?search=ann@example` });
    expect(searched.body.requests).toHaveLength(1);
    expect((await call(app, "clearEmailJsRequests", { method: "DELETE", url })).response.statusCode).toBe(204);
    expect((await call(app, "listEmailJsRequests", { method: "GET", url })).body.requests).toEqual([]);
    expect(
      (await call(app, "clearEmailJsRequests", { method: "DELETE", url: "/_mock/v1/emailjs/accounts/nope/requests" }))
        .response.statusCode,
    ).toBe(404);
  });
});
