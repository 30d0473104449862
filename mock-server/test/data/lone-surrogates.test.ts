/**
 * Half of a UTF-16 surrogate pair alone (`"\ud800"` in JSON, `"😀".slice(0, 1)` in a function) is
 * not Unicode: the service reads it as U+FFFD (Go's parsers) and MongoDB stores UTF-8 only. Sent by
 * a client or made by a function, it is stored, found, answered and mailed as U+FFFD, pairs kept
 * whole — on both stores alike (PostgreSQL's jsonb refused it: a write holding one was a 500).
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anonymousLogin,
  base,
  call,
  callAppFunction,
  emailUser,
  getProfile,
  mongoAction,
  newApp,
  newOpenApp,
  testApp,
} from "../helpers/app.ts";
import { mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";
import { hs256 } from "../helpers/jwt.ts";
import { beginUrl, fragmentOf, location, throughProvider, userAuthOf } from "../helpers/oauth2.ts";

const high = "\ud83d";
const low = "\ude00";
const emoji = `${high}${low}`;

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
});
afterAll(() => app.close());

describe("a lone surrogate", () => {
  it("a client sends is stored and found as U+FFFD, a pair kept", async () => {
    const appId = await newOpenApp(app);
    const { access_token } = await anonymousLogin(app, appId);
    const action = (name: string, argument: Record<string, unknown>) =>
      mongoAction(app, appId, access_token, name, { database: "d", collection: "halves", ...argument });
    const inserted = await action("insertMany", {
      documents: [
        { _id: `a${high}`, text: `x${low}y`, [`k${high}`]: [emoji, `${low}${high}`], literal: "\\ud800" },
        { _id: "b", text: `${high}${high}${low}`, nested: { [low]: { deep: `${emoji}${high}` } } },
      ],
    });
    expect(inserted.response.statusCode, JSON.stringify(inserted.body)).toBe(200);
    expect(inserted.body.insertedIds).toEqual(["a\ufffd", "b"]);
    const all = await action("find", { query: {}, sort: { _id: 1 } });
    expect(all.body).toEqual([
      { _id: "a\ufffd", text: "x\ufffdy", "k\ufffd": [emoji, "\ufffd\ufffd"], literal: "\\ud800" },
      { _id: "b", text: `\ufffd${emoji}`, nested: { "\ufffd": { deep: `${emoji}\ufffd` } } },
    ]);
    // A query is read the same way: the half finds what was stored for it.
    expect((await action("find", { query: { text: `x${high}y` }, project: { _id: 1 } })).body).toEqual([
      { _id: "a\ufffd" },
    ]);
    const updated = await action("updateOne", { query: { _id: "b" }, update: { $set: { text: low } } });
    expect(updated.body).toMatchObject({ modifiedCount: { $numberInt: "1" } });
    expect((await action("findOne", { query: { text: "\ufffd" }, project: { _id: 1 } })).body).toEqual({ _id: "b" });
  });

  it("in a Data API request is stored as U+FFFD, in a small body and in a large one", async () => {
    const appId = await newOpenApp(app, { dataApi: { versions: ["v1"], returnType: "EJSON" } });
    const user = await emailUser(app, appId, "halves@example.com", "secret-1");
    const dataApi = (action: string, body: Record<string, unknown>) =>
      call(app, "callDataApi", {
        method: "POST",
        url: `/app/${appId}/endpoint/data/v1/action/${action}`,
        headers: { "content-type": "application/ejson", authorization: `Bearer ${user.access_token}` },
        payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "d", collection: "api", ...body }),
      });
    for (const pad of ["", "p".repeat(300 * 1024)]) {
      const inserted = await dataApi("insertOne", { document: { _id: pad.length, text: `x${high}`, pad } });
      expect(inserted.response.statusCode, JSON.stringify(inserted.body)).toBe(200);
    }
    const found = await dataApi("find", { filter: { text: "x\ufffd" }, projection: { pad: 0 } });
    // (Typed application/ejson: the body as text.)
    expect(JSON.parse(found.response.body).documents).toEqual([
      { _id: { $numberInt: "0" }, text: "x\ufffd" },
      { _id: { $numberInt: String(300 * 1024) }, text: "x\ufffd" },
    ]);
  });

  it("a function makes is stored and answered as U+FFFD", async () => {
    const appId = await newOpenApp(app, {
      functions: {
        half: {
          source: `exports = async (text) => {
            const cut = text.slice(0, 1);
            const items = context.services.get("mongodb-atlas").db("d").collection("cut");
            await items.insertOne({ _id: 1, cut, [cut]: text.slice(1) });
            return { cut, found: await items.findOne({ cut }) };
          };`,
        },
      },
    });
    const { access_token } = await anonymousLogin(app, appId);
    const called = await callAppFunction(app, appId, access_token, "half", [`${emoji}!`]);
    expect(called.response.statusCode, JSON.stringify(called.body)).toBe(200);
    expect(called.body).toEqual({
      cut: "\ufffd",
      found: { _id: { $numberInt: "1" }, cut: "\ufffd", "\ufffd": `${low}!`.replace(low, "\ufffd") },
    });
    expect(JSON.stringify(called.body)).not.toMatch(/\\ud[89a-f]/i);
    // A failure's message too.
    const failing = await newOpenApp(app, {
      functions: { cut: { source: 'exports = () => { throw new Error("cut " + "😀".slice(0, 1)); };' } },
    });
    const failingToken = (await anonymousLogin(app, failing)).access_token;
    const failed = await callAppFunction(app, failing, failingToken, "cut", []);
    expect(failed.body).toMatchObject({ error: "Error: cut \ufffd", error_code: "FunctionExecutionError" });
    // What the function stored, read by a client.
    const read = await mongoAction(app, appId, access_token, "find", { database: "d", collection: "cut", query: {} });
    expect(read.body).toEqual([called.body.found]);
  });

  it("in a function's arguments is U+FFFD, a large body's too", async () => {
    const appId = await newOpenApp(app, {
      functions: { wellFormed: { source: "exports = (text, pad) => [text, text.isWellFormed(), pad.length];" } },
    });
    const { access_token } = await anonymousLogin(app, appId);
    for (const pad of ["", "p".repeat(300 * 1024)]) {
      const called = await callAppFunction(app, appId, access_token, "wellFormed", [`a${high}b${emoji}`, pad]);
      expect(called.response.statusCode, JSON.stringify(called.body)).toBe(200);
      expect(called.body).toEqual([`a\ufffdb${emoji}`, true, { $numberInt: String(pad.length) }]);
    }
  });

  it("in a login's payload, a custom token's claims, an identity and a message is U+FFFD", async () => {
    const functionApp = await newApp(app, {
      providers: { "custom-function": { enabled: true, authFunctionName: "authenticate" } },
    });
    const login = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${functionApp}/auth/providers/custom-function/login`,
      payload: { username: `Ad${high}`, pin: { $numberInt: "333" } },
    });
    expect(login.response.statusCode, JSON.stringify(login.body)).toBe(200);
    const profile = await getProfile(app, login.body.access_token);
    expect(profile.body.identities[0]).toMatchObject({ id: "ad\ufffd", provider_type: "custom-function" });

    // A custom token's claims (JSON inside the JWT): its identity and the profile's metadata.
    const key = "a-signing-key-of-some-length";
    const tokenApp = await newApp(app, {
      providers: {
        "custom-token": { enabled: true, signingKey: key, audience: "notes", metadataFields: [{ name: "name" }] },
      },
    });
    const exp = Math.floor(Date.now() / 1000) + 600;
    const token = hs256({ sub: `user-${low}`, aud: "notes", exp, name: `Jo ${emoji}${high}` }, key);
    const signedIn = await call(app, "login", {
      method: "POST",
      url: `${base}/app/${tokenApp}/auth/providers/custom-token/login`,
      payload: { token },
    });
    expect(signedIn.response.statusCode, JSON.stringify(signedIn.body)).toBe(200);
    const tokenProfile = await getProfile(app, signedIn.body.access_token);
    expect(tokenProfile.body.identities[0]).toMatchObject({ id: "user-\ufffd", provider_type: "custom-token" });
    expect(tokenProfile.body.data).toEqual({ name: `Jo ${emoji}\ufffd` });

    // Sign in with Apple's `user` field: JSON the provider does not sign (a client may change it).
    const appleApp = await newApp(app);
    const begun = await call(app, "beginOAuthLogin", { method: "GET", url: beginUrl(appleApp, "oauth2-apple") });
    const end = await throughProvider(app, location(begun.response), { email: "g@example.com" }, (posted) => {
      posted.user = JSON.stringify({ name: { firstName: `Gr${high}`, lastName: `H${low}` } });
    });
    const apple = userAuthOf(fragmentOf(location(end)));
    expect((await getProfile(app, apple.accessToken)).body.data).toEqual({
      name: "Gr\ufffd H\ufffd",
      email: "g@example.com",
    });

    const { publicKey } = await newAccount(app);
    const { response } = await sendEmail(app, {
      lib_version: "4.4.1",
      user_id: publicKey,
      service_id: "local_service",
      template_id: "local_template",
      template_params: { to_email: "ann@example.com", subject: `Hi ${high}`, message: `one${low}${emoji}` },
    });
    expect(response.statusCode).toBe(200);
    const [mail] = await mailOf(app, publicKey);
    expect(mail).toMatchObject({ subject: "Hi \ufffd", templateParams: { message: `one\ufffd${emoji}` } });
  });
});
