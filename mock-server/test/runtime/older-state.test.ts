/**
 * A `--data-dir` state written by an earlier version of the emulator still loads: a developer who
 * pulls a newer version keeps the accounts, sessions, data and mail of `npm start`. The fixture is
 * the development stack's state file of 2026-11-24 (commit b5da78d) after its seed, a sign-in of
 * ada@example.com, a note, an API key and a registration waiting for its confirmation. A change of
 * the state's shape that cannot read it needs a conversion, not a new fixture.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StatePersistence, stateFileName } from "../../src/runtime/persistence.ts";
import { base, bearer, call, memoryApp, mongoAction } from "../helpers/app.ts";

const here = dirname(fileURLToPath(import.meta.url));
const fixture = join(here, "..", "fixtures", "dev-state-2026-11-24.json");
const appDir = join(here, "..", "..", "apps", "local-app");
const appId = "local-app";
const ada = { id: "6b0c5f5a04dc3cf2944f0c95", email: "ada@example.com", password: "notes-ada" };
const apiKey = "6b5bc8ad24d8cb8dbc79fb983d969349c8d0795e01d1b68c4dfc217ffe6ef54f";

let app: FastifyInstance;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "older-state-"));
  // The state names the app folder it was started with, as a path of that checkout; a start with
  // `--app` (the development stack's) names this one.
  const state = JSON.parse(readFileSync(fixture, "utf8"));
  state.apps[0].appDir = appDir;
  writeFileSync(join(dir, stateFileName), JSON.stringify(state));
  app = await memoryApp();
  expect(await new StatePersistence(app.emulator, dir).load()).toBe(true);
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

const login = (provider: string, payload: Record<string, unknown>) =>
  call(app, "login", { method: "POST", url: `${base}/app/${appId}/auth/providers/${provider}/login`, payload });

describe("a state saved by an earlier version", () => {
  it("signs its users in by password and by API key, as the same user", async () => {
    const byPassword = await login("local-userpass", { username: ada.email, password: ada.password });
    expect(byPassword.response.statusCode).toBe(200);
    expect(byPassword.body.user_id).toBe(ada.id);
    const byKey = await login("api-key", { key: apiKey });
    expect(byKey.response.statusCode).toBe(200);
    expect(byKey.body.user_id).toBe(ada.id);
  });

  it("keeps the data, and its rules", async () => {
    const { body } = await login("local-userpass", { username: ada.email, password: ada.password });
    const found = await mongoAction(app, appId, body.access_token, "find", {
      database: "notes-app",
      collection: "notes",
      query: { owner_id: ada.id },
    });
    expect(found.response.statusCode).toBe(200);
    expect(found.body.map((note: { title: string }) => note.title)).toContain("From the old version");
    const grace = await login("local-userpass", { username: "grace@example.com", password: "notes-grace" });
    const theirs = await mongoAction(app, appId, grace.body.access_token, "find", {
      database: "notes-app",
      collection: "notes",
      query: { owner_id: ada.id },
    });
    expect(theirs.body).toEqual([]);
  });

  it("keeps the mail, and the registration waiting for its confirmation", async () => {
    const mail = await call(app, "listMail", { method: "GET", url: "/_mock/v1/mail?to=newbie@example.com" });
    expect(mail.body.messages.map((m: { kind: string }) => m.kind)).toEqual(["confirm"]);
    // (Its link has expired since: the fixture's times are of its day.) A new link confirms it.
    const resent = await call(app, "resendConfirmationEmail", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/confirm/send`,
      payload: { email: "newbie@example.com" },
    });
    expect(resent.response.statusCode).toBe(200);
    const again = await call(app, "listMail", { method: "GET", url: "/_mock/v1/mail?to=newbie@example.com" });
    const { token, tokenId } = again.body.messages.at(-1);
    const confirmed = await call(app, "confirmUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/confirm`,
      payload: { token, tokenId },
    });
    expect(confirmed.response.statusCode).toBe(200);
    const first = await login("local-userpass", { username: "newbie@example.com", password: "secret-123" });
    expect(first.response.statusCode).toBe(200);
    const profile = await call(app, "getProfile", {
      method: "GET",
      url: `${base}/auth/profile`,
      headers: bearer(first.body.access_token),
    });
    expect(profile.body.data.email).toBe("newbie@example.com");
  });
});
