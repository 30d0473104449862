/**
 * U+0000 is a valid character of a JSON string, a MongoDB string and a URL path (`%00`); PostgreSQL's
 * text cannot hold it. Whatever a client sends with it gets the answer the in-memory store gives:
 * documents keep it (and U+E000, the PostgreSQL store's escape character) and are found by it, and
 * names holding it find nothing (404, never a 500). Runs on both stores.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anonymousLogin,
  base,
  bearer,
  call,
  emailUser,
  mongoAction,
  newApp,
  newOpenApp,
  testApp,
} from "../helpers/app.ts";
import { mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
beforeAll(async () => {
  app = await testApp();
  appId = await newOpenApp(app);
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const action = (name: string, argument: Record<string, unknown>) =>
  mongoAction(app, appId, token, name, { database: "db", collection: "nul", ...argument });

describe("U+0000 in documents", () => {
  it("is kept in values, _id and beside U+E000, and documents are found by it", async () => {
    const docs = [
      { _id: "id\u0000one", text: "a\u0000b", tags: ["\u0000"], "key\uE000": "\uE000\u0000\uE000" },
      { _id: "id\uE0000one", text: "a\uE0000b", tags: ["\uE0000"], "key\uE000": "plain" },
      { _id: "id\\u0000one", text: "a\\u0000b", tags: [], "key\uE000": "\\u0000" },
    ];
    const inserted = await action("insertMany", { documents: docs });
    expect(inserted.response.statusCode).toBe(200);
    expect(inserted.body.insertedIds).toEqual(docs.map((d) => d._id));

    const all = await action("find", { query: {}, sort: { _id: 1 } });
    expect(all.body).toEqual([...docs].sort((a, b) => (a._id < b._id ? -1 : 1)));
    // Each form finds its own document only: by _id, by a field (pushed down or not), in an array.
    for (const doc of docs) {
      for (const query of [{ _id: doc._id }, { text: doc.text }, { "key\uE000": doc["key\uE000"] }]) {
        expect((await action("find", { query })).body, JSON.stringify(query)).toEqual([doc]);
      }
    }
    expect((await action("find", { query: { tags: "\u0000" } })).body).toEqual([docs[0]]);
    expect((await action("find", { query: { tags: { $in: ["\uE0000"] } } })).body).toEqual([docs[1]]);

    const updated = await action("updateOne", {
      query: { _id: "id\u0000one" },
      update: { $set: { text: "c\u0000\uE000d" }, $push: { tags: "\uE000\u0000" } },
    });
    expect(updated.body).toMatchObject({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    expect((await action("findOne", { query: { text: "c\u0000\uE000d" } })).body).toEqual({
      ...docs[0],
      text: "c\u0000\uE000d",
      tags: ["\u0000", "\uE000\u0000"],
    });
    expect((await action("deleteOne", { query: { _id: "id\uE0000one" } })).body).toEqual({
      deletedCount: { $numberInt: "1" },
    });
    expect((await action("count", { query: {} })).body).toEqual({ $numberLong: "2" });
  });

  it("is kept in an identity's id and in mail", async () => {
    const functionApp = await newApp(app, {
      providers: { "custom-function": { enabled: true, authFunctionName: "authenticate" } },
    });
    const login = () =>
      call(app, "login", {
        method: "POST",
        url: `${base}/app/${functionApp}/auth/providers/custom-function/login`,
        payload: { username: "Ada\u0000\uE000", pin: { $numberInt: "555" } }, // pin: the length, three times
      });
    const first = await login();
    expect(first.response.statusCode).toBe(200);
    expect((await login()).body.user_id).toBe(first.body.user_id);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(first.body.access_token),
    });
    expect(profile.body.identities[0]).toMatchObject({ id: "ada\u0000\uE000", provider_type: "custom-function" });

    const { publicKey } = await newAccount(app);
    const params = { to_email: "ann@example.com", subject: "Hi\u0000", message: "one\u0000two\uE000" };
    const { response } = await sendEmail(app, {
      lib_version: "4.4.1",
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: params,
    });
    expect(response.statusCode).toBe(200);
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({ subject: "Hi\u0000", templateParams: params });
  });
});

describe("U+0000 in names", () => {
  it("finds no app, user, key, message or collection (404), on the client and the control API", async () => {
    const owner = await emailUser(app, appId, "names@example.com", "secret-1");
    const answers = [
      await call(app, "getLocation", { method: "GET", url: `${base}/app/${appId}%00/location` }),
      await call(app, "login", {
        method: "POST",
        url: `${base}/app/%00/auth/providers/anon-user/login`,
        payload: {},
      }),
      await call(app, "getApiKey", {
        method: "GET",
        url: `${base}/auth/api_keys/${"0".repeat(23)}%00`,
        headers: bearer(owner.refresh_token),
      }),
      await call(app, "getApp", { method: "GET", url: `/_mock/v1/apps/${appId}%00` }),
      await call(app, "getUser", { method: "GET", url: `/_mock/v1/apps/${appId}/users/${owner.user_id}%00` }),
      await call(app, "getMail", { method: "GET", url: "/_mock/v1/mail/m-1%00" }),
    ];
    for (const { response } of answers) expect(response.statusCode, response.body).toBe(404);
    const documents = await call(app, "listDocuments", {
      method: "GET",
      url: `/_mock/v1/apps/${appId}/data/db%00/nul`,
    });
    expect(documents.response.statusCode).toBe(200);
    expect(documents.body.documents).toEqual([]);
  });

  it("confirms no account and resets no password with a token holding U+0000", async () => {
    const provider = `${base}/app/${appId}/auth/providers/local-userpass`;
    const confirm = await call(app, "confirmUser", {
      method: "POST",
      url: `${provider}/confirm`,
      payload: { token: "t\u0000", tokenId: "i\u0000" },
    });
    const reset = await call(app, "resetPassword", {
      method: "POST",
      url: `${provider}/reset`,
      payload: { token: "t\u0000", tokenId: "i\u0000", password: "secret-2" },
    });
    const resend = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: `${provider}/confirm/send`,
      payload: { email: "nobody\u0000@example.com" },
    });
    expect([confirm, reset, resend].map((a) => a.response.statusCode)).toEqual([400, 400, 404]);
  });
});
