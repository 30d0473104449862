/**
 * The rest of realm-web 2.0.1's public API, unchanged, against the emulator: the custom JWT and
 * custom function credentials, custom user data refreshed, a custom confirmation retried, the reset
 * function called, and findOneAndDelete (whose 2.0.1 bug the service answered as a replacement).
 */
import type { FastifyInstance } from "fastify";
import { SignJWT } from "jose";
import * as Realm from "realm-web";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
let appCounter = 0;

beforeAll(async () => {
  ({ app, url } = await listening());
});
afterAll(async () => {
  await app.close();
});

/** A fresh app of the default template (its functions, custom user data, rules) and a realm-web App. */
async function freshApp(config: Record<string, unknown> = {}) {
  const appId = `realm-web-flows-${++appCounter}`;
  const response = await fetch(`${url}/_mock/v1/apps`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ appId, config }),
  });
  expect(response.status).toBe(201);
  return new Realm.App({ id: appId, baseUrl: url });
}

describe("realm-web 2.0.1's other credentials and flows", () => {
  it("logs in with a custom JWT (Credentials.jwt) and a custom function (Credentials.function)", async () => {
    const key = "a-signing-key-for-realm-web-flows";
    const realm = await freshApp({
      providers: {
        "custom-token": { enabled: true, signingKey: key, audience: "flows" },
        "custom-function": { enabled: true, authFunctionName: "authenticate" },
      },
    });
    const token = await new SignJWT({ aud: "flows" })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("jwt-user-1")
      .setExpirationTime("10m")
      .sign(new TextEncoder().encode(key));
    const jwtUser = await realm.logIn(Realm.Credentials.jwt(token));
    expect(jwtUser.providerType).toBe("custom-token");
    expect(jwtUser.identities[0]).toMatchObject({ id: "jwt-user-1", providerType: "custom-token" });

    const functionUser = await realm.logIn(Realm.Credentials.function({ username: "Ada", pin: 333 }));
    expect(functionUser.providerType).toBe("custom-function");
    expect(functionUser.identities[0]).toMatchObject({ id: "ada" });
    await expect(realm.logIn(Realm.Credentials.function({ username: "Ada", pin: 0 }))).rejects.toMatchObject({
      statusCode: 401,
    });
  });

  it("refreshes a user's custom data after its document is written (refreshCustomData)", async () => {
    const realm = await freshApp();
    const user = await realm.logIn(Realm.Credentials.anonymous());
    expect(user.customData).toEqual({});
    const profiles = user.mongoClient("mongodb-atlas").db("notes-app").collection("profiles");
    await profiles.insertOne({ user_id: user.id, displayName: "Ada" });
    const data = await user.refreshCustomData();
    expect(data).toMatchObject({ user_id: user.id, displayName: "Ada" });
    expect(user.customData).toMatchObject({ displayName: "Ada" });
  });

  it("retries a pending custom confirmation and resets a password through the reset function", async () => {
    const realm = await freshApp({
      providers: {
        "local-userpass": {
          runConfirmationFunction: true,
          confirmationFunctionName: "confirmUser",
          runResetFunction: true,
          resetFunctionName: "resetPassword",
        },
      },
    });
    // The template's confirmUser keeps "+pending" addresses pending; a retry runs it again.
    const pending = "wait+pending@example.com";
    await realm.emailPasswordAuth.registerUser({ email: pending, password: "first-secret" });
    await realm.emailPasswordAuth.retryCustomConfirmation({ email: pending });
    await expect(realm.logIn(Realm.Credentials.emailPassword(pending, "first-secret"))).rejects.toMatchObject({
      statusCode: 401,
    });
    await expect(
      realm.emailPasswordAuth.retryCustomConfirmation({ email: "nobody@example.com" }),
    ).rejects.toMatchObject({ errorCode: "UserNotFound" });

    // resetPassword answers success for "blue", failure for "red".
    const email = "reset@example.com";
    await realm.emailPasswordAuth.registerUser({ email, password: "first-secret" });
    await expect(
      realm.emailPasswordAuth.callResetPasswordFunction({ email, password: "other-secret" }, "red"),
    ).rejects.toMatchObject({ statusCode: 400 });
    await realm.emailPasswordAuth.callResetPasswordFunction({ email, password: "second-secret" }, "blue");
    const user = await realm.logIn(Realm.Credentials.emailPassword(email, "second-secret"));
    expect(user.profile.email).toBe(email);
  });

  it("answers findOneAndDelete as the service did for 2.0.1's request: a replacement by the _id alone", async () => {
    const realm = await freshApp({
      rules: { "notes-app.open": { read: true, write: true, insert: true, delete: true } },
    });
    const user = await realm.logIn(Realm.Credentials.anonymous());
    const db = user.mongoClient("mongodb-atlas").db("notes-app");
    // Where the rules let any document be written, the match is left as its _id alone.
    const open = db.collection("open");
    const { insertedId } = await open.insertOne({ title: "keep me?" });
    expect(await open.findOneAndDelete({ title: "keep me?" })).toMatchObject({ title: "keep me?" });
    expect(await open.find({})).toEqual([{ _id: insertedId }]);
    // Under an owner rule the _id-only document is not the user's to write: "update not permitted".
    const notes = db.collection("notes");
    await notes.insertOne({ owner_id: user.id, title: "mine" });
    await expect(notes.findOneAndDelete({ title: "mine" })).rejects.toMatchObject({
      statusCode: 400,
      error: "update not permitted",
    });
    expect(await notes.count({ title: "mine" })).toBe(1);
  });
});
