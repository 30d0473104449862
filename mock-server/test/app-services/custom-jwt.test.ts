/**
 * The custom JWT provider (`custom-token`) as an exported app configures it: up to three signing
 * keys (a key being rotated out still signs in), HS256 or RS256, or a JWK URI (RS256, the key the
 * token's `kid` names, as Firebase, Auth0 or Okta publish them), audiences of which all, or
 * with `requireAnyAudience` any one, must be in the token, and the service's limits of a token's
 * length and of each metadata field's.
 */

import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import { exportJWK, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxIdentityIdLength } from "../../src/store/store.ts";
import { base, call, newApp, testApp } from "../helpers/app.ts";
import { hs256 } from "../helpers/jwt.ts";

let app: FastifyInstance;
let jwks: Server;
let jwksUrl: string;
/** The keys the JWKS server publishes now, and how often it was asked. */
let published: JWK[] = [];
let fetched = 0;

const rsa = () => generateKeyPairSync("rsa", { modulusLength: 2048 });
const current = rsa();
const next = rsa();
const stranger = rsa();

beforeAll(async () => {
  jwks = createServer((_request, response) => {
    fetched++;
    response.setHeader("content-type", "application/json");
    response.end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
  published = [{ ...(await exportJWK(current.publicKey)), kid: "current", alg: "RS256", use: "sig" }];
  app = await testApp();
});
afterAll(async () => {
  await app.close();
  await new Promise((resolve) => jwks.close(resolve));
});

const now = () => Math.floor(Date.now() / 1000);

const rs256 = (payload: Record<string, unknown>, key: ReturnType<typeof rsa>, kid: string) =>
  new SignJWT(payload).setProtectedHeader({ alg: "RS256", kid }).sign(key.privateKey);

const login = (appId: string, token: string) =>
  call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/custom-token/login`,
    payload: { token },
  });

const customToken = (config: Record<string, unknown>) =>
  newApp(app, { providers: { "custom-token": { enabled: true, ...config } } });

describe("custom JWT signing keys", () => {
  it("take a token signed with any of the keys (rotation), and no other", async () => {
    const appId = await customToken({
      signingKey: "the-new-key-of-thirty-two-characters",
      signingKeys: ["the-old-key-of-thirty-two-characters"],
      audience: "notes",
    });
    const claims = { sub: "u-1", aud: "notes", exp: now() + 600 };
    for (const key of ["the-new-key-of-thirty-two-characters", "the-old-key-of-thirty-two-characters"]) {
      expect((await login(appId, hs256(claims, key))).response.statusCode, key).toBe(200);
    }
    const refused = await login(appId, hs256(claims, "a-key-nobody-configured-for-this-app"));
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body).toMatchObject({ error: "invalid custom auth token: signature is invalid" });
  });

  it("check RS256 tokens against PEM public keys", async () => {
    const appId = await customToken({
      signingAlgorithm: "RS256",
      signingKey: current.publicKey.export({ type: "spki", format: "pem" }).toString(),
      audience: [],
    });
    const claims = { sub: "u-2", exp: now() + 600 };
    const ok = await login(appId, await rs256(claims, current, "any"));
    expect(ok.response.statusCode, JSON.stringify(ok.body)).toBe(200);
    expect((await login(appId, await rs256(claims, stranger, "any"))).body).toMatchObject({
      error: "invalid custom auth token: signature is invalid",
    });
    // An HS256 token is not one of this provider's, whatever its key.
    expect((await login(appId, hs256(claims, "x".repeat(32)))).response.statusCode).toBe(401);
  });
});

describe("custom JWT audiences", () => {
  it("want all the listed audiences, or any one with requireAnyAudience", async () => {
    const key = "a-signing-key-of-thirty-two-chars!";
    const all = await customToken({ signingKey: key, audience: ["notes", "admin"] });
    const any = await customToken({ signingKey: key, audience: ["notes", "admin"], requireAnyAudience: true });
    const token = (aud: unknown) => hs256({ sub: "u-3", aud, exp: now() + 600 }, key);
    expect((await login(all, token(["notes", "admin", "more"]))).response.statusCode).toBe(200);
    expect((await login(all, token("notes"))).body).toMatchObject({
      error: "invalid custom auth token: audience does not match",
    });
    expect((await login(any, token("admin"))).response.statusCode).toBe(200);
    expect((await login(any, token("other"))).response.statusCode).toBe(401);
  });
});

describe("custom JWT lengths", () => {
  it("refuse a token past 1,000,000 characters and a metadata field past 4,096", async () => {
    const key = "a-signing-key-of-thirty-two-chars!";
    const appId = await customToken({ signingKey: key, audience: [], metadataFields: [{ name: "bio" }] });
    const token = (extra: object) => hs256({ sub: "u-4", exp: now() + 600, ...extra }, key);
    expect((await login(appId, token({ bio: "b".repeat(4096) }))).response.statusCode).toBe(200);
    // The subject names an identity in every refresh token of its sessions.
    expect((await login(appId, token({ sub: "s".repeat(maxIdentityIdLength) }))).response.statusCode).toBe(200);
    expect((await login(appId, token({ sub: "s".repeat(maxIdentityIdLength + 1) }))).body).toMatchObject({
      error: `invalid custom auth token: the sub claim is longer than ${maxIdentityIdLength} characters`,
      error_code: "AuthError",
    });
    expect((await login(appId, token({ bio: "b".repeat(4097) }))).body).toMatchObject({
      error: "invalid custom auth token: the metadata field 'bio' is longer than 4096 characters",
      error_code: "AuthError",
    });
    // A claim that is no metadata field counts only in the token's length.
    expect((await login(appId, token({ other: "o".repeat(700_000) }))).response.statusCode).toBe(200);
    expect((await login(appId, token({ other: "o".repeat(760_000) }))).body).toMatchObject({
      error: "invalid custom auth token: the token is longer than 1000000 characters",
    });
  });
});

describe("a JWK URI", () => {
  it("checks RS256 tokens against the published key their kid names, and finds a new key", async () => {
    const appId = await customToken({ jwkUri: jwksUrl, audience: ["project-1"] });
    const claims = { sub: "firebase-uid", aud: "project-1", exp: now() + 600, email: "f@example.com" };
    const first = await login(appId, await rs256(claims, current, "current"));
    expect(first.response.statusCode, JSON.stringify(first.body)).toBe(200);
    // Of several published keys the one the kid names. (A key published after a fetch is found by
    // the next fetch, which a token naming an unknown key brings at most every 30 s: another URL
    // here, so that the test does not wait.)
    published = [...published, { ...(await exportJWK(next.publicKey)), kid: "next", alg: "RS256", use: "sig" }];
    const rotated = await customToken({ jwkUri: `${jwksUrl}?after-rotation`, audience: ["project-1"] });
    expect((await login(rotated, await rs256(claims, next, "next"))).response.statusCode).toBe(200);
    expect((await login(rotated, await rs256(claims, current, "current"))).response.statusCode).toBe(200);
    const forged = await login(appId, await rs256(claims, stranger, "current"));
    expect(forged.response.statusCode).toBe(401);
    expect(forged.body).toMatchObject({ error: "invalid custom auth token: signature is invalid" });
    const unknownKid = await login(appId, await rs256(claims, stranger, "stranger"));
    expect(unknownKid.response.statusCode).toBe(401);
    // An HS256 token is not taken when the keys come from a JWK URI.
    expect((await login(appId, hs256(claims, "whatever-key-of-thirty-two-chars"))).response.statusCode).toBe(401);
    expect(fetched).toBeGreaterThan(0);
  });

  it("refuses tokens while the JWK URI cannot be read, and says why", async () => {
    const appId = await customToken({ jwkUri: "http://127.0.0.1:9/nothing-listens-here" });
    const refused = await login(appId, await rs256({ sub: "x", exp: now() + 600 }, current, "current"));
    expect(refused.response.statusCode).toBe(401);
    expect(refused.body.error).toMatch(/^invalid custom auth token: the JWK URI could not be read/);
  });
});
