/**
 * The production guide's backup: `pg_dump` of a live database, `pg_restore` into an empty one, and
 * an instance started on the copy serves as the original did — the same users signed in (their
 * access and refresh tokens), API keys, documents of every type, the app's counted limits, mail,
 * change streams, and every write path (the triggers that count and the indexes that keep names
 * unique come back with the schema).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findPostgres } from "../../../scripts/postgres-cluster.mjs";
import { base, bearer, call, emailUser, getProfile, mongoAction, newApp, openData, testApp } from "../helpers/app.ts";
import { createTestDatabase, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { openWatch } from "../helpers/watch.ts";

const run = promisify(execFile);
const signingSecret = "a-backup-test-signing-secret-0123456789";
const binaries = findPostgres();

const databases: TestDatabase[] = [];
const started: FastifyInstance[] = [];
let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "backup-"));
});
afterAll(async () => {
  for (const app of started) await app.close();
  for (const database of databases) await database.drop();
  await rm(folder, { recursive: true, force: true });
});

async function instance(databaseUrl: string): Promise<FastifyInstance> {
  const app = await testApp({ databaseUrl, signingSecret });
  started.push(app);
  return app;
}

/** The guide's commands: a dump in PostgreSQL's custom format, restored into an empty database. */
async function dumpAndRestore(from: TestDatabase): Promise<TestDatabase> {
  const file = join(folder, `${from.name}.dump`);
  await run(join(binaries!.binDir, "pg_dump"), ["--format=custom", `--file=${file}`, from.url], { timeout: 60_000 });
  const to = await createTestDatabase("restored");
  databases.push(to);
  await run(join(binaries!.binDir, "pg_restore"), ["--no-owner", "--exit-on-error", `--dbname=${to.url}`, file], {
    timeout: 60_000,
  });
  return to;
}

const find = (app: FastifyInstance, appId: string, token: string, filter: Record<string, unknown> = {}) =>
  mongoAction(app, appId, token, "find", { database: "d", collection: "notes", query: filter });
const insert = (app: FastifyInstance, appId: string, token: string, document: Record<string, unknown>) =>
  mongoAction(app, appId, token, "insertOne", { database: "d", collection: "notes", document });
/** With the refresh token, as realm-web asks. */
const createKey = (app: FastifyInstance, token: string, name: string) =>
  call(app, "createApiKey", {
    method: "POST",
    url: `${base}/auth/api_keys`,
    headers: bearer(token),
    payload: { name },
  });

describe("a database dumped live and restored into an empty one", () => {
  it("serves the same users, sessions, keys, documents, limits, mail and streams", async () => {
    const original = await emulatorDatabase("backup");
    databases.push(original);
    const before = await instance(original.url);
    const appId = await newApp(before, {
      ...openData,
      providers: { "local-userpass": { enabled: true, autoConfirm: false }, "api-key": { enabled: true } },
      limits: { documents: 4 },
    });
    const ada = await emailUser(before, appId, "ada@example.com");
    const notes = [
      { _id: { $oid: "65a1b2c3d4e5f60718293a4b" }, n: 1, price: { $numberDecimal: "9.99" } },
      { _id: "second", n: { $numberLong: "2" }, at: { $date: { $numberLong: "1700000000000" } } },
      { _id: 3, n: 3, tags: ["x", "y"] },
    ];
    for (const note of notes)
      expect((await insert(before, appId, ada.access_token, note)).response.statusCode).toBe(200);
    const key = await createKey(before, ada.refresh_token, "backend");
    expect(key.response.statusCode).toBe(201);
    // A registration waiting for its confirmation: a pending account and its mail.
    const registered = await call(before, "registerUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/register`,
      payload: { email: "grace@example.com", password: "correct horse" },
    });
    expect(registered.response.statusCode).toBe(201);
    const mailBefore = await call(before, "listMail", { method: "GET", url: `/_mock/v1/mail?appId=${appId}` });
    expect(mailBefore.body.messages).toHaveLength(1);

    const restored = await dumpAndRestore(original);
    const after = await instance(restored.url);

    // The user's tokens of before, and a new login by password and by API key.
    expect((await getProfile(after, ada.access_token)).response.statusCode).toBe(200);
    const refreshed = await call(after, "refreshAccessToken", {
      method: "POST",
      url: `${base}/auth/session`,
      headers: bearer(ada.refresh_token),
    });
    expect(refreshed.response.statusCode).toBe(201);
    const login = await call(after, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username: "ada@example.com", password: "correct horse" },
    });
    expect(login.response.statusCode).toBe(200);
    expect(login.body.user_id).toBe(ada.user_id);
    const byKey = await call(after, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/api-key/login`,
      payload: { key: key.body.key },
    });
    expect(byKey.response.statusCode).toBe(200);
    expect(byKey.body.user_id).toBe(ada.user_id);
    // The key's name is still taken (a unique index on an expression of the schema's own function).
    const again = await createKey(after, ada.refresh_token, "backend");
    expect(again.response.statusCode).toBe(409);

    // The documents, their types, their order and the index lookups; the pending mail.
    const all = await find(after, appId, ada.access_token);
    expect(all.body).toEqual((await find(before, appId, ada.access_token)).body);
    expect(all.body).toHaveLength(3);
    expect(all.body[0].price).toEqual({ $numberDecimal: "9.99" });
    expect(all.body[1].at).toEqual({ $date: { $numberLong: "1700000000000" } });
    const byDecimal = await find(after, appId, ada.access_token, { price: { $numberDecimal: "9.99" } });
    expect(byDecimal.body).toHaveLength(1);
    const byTag = await find(after, appId, ada.access_token, { tags: "y" });
    expect(byTag.body.map((note: { _id: unknown }) => note._id)).toEqual([{ $numberInt: "3" }]);
    const mailAfter = await call(after, "listMail", { method: "GET", url: `/_mock/v1/mail?appId=${appId}` });
    expect(mailAfter.body.messages.map((m: { id: string }) => m.id)).toEqual(
      mailBefore.body.messages.map((m: { id: string }) => m.id),
    );

    // Writes: a change stream sees one; the app's count of documents went with the data (its
    // limit of 4 refuses the fifth), and comes after the restored documents.
    await after.listen({ port: 0, host: "127.0.0.1" });
    const address = after.server.address() as { port: number };
    const stream = await openWatch(`http://127.0.0.1:${address.port}`, appId, ada.access_token, {
      database: "d",
      collection: "notes",
    });
    try {
      expect(stream.response.status).toBe(200);
      expect((await insert(after, appId, ada.access_token, { _id: 4, n: 4 })).response.statusCode).toBe(200);
      expect(await stream.next()).toContain('"operationType":"insert"');
    } finally {
      stream.close();
    }
    const fifth = await insert(after, appId, ada.access_token, { _id: 5, n: 5 });
    expect(fifth.response.statusCode).toBe(400);
    expect(fifth.body.error).toMatch(/maximum number of documents/);
    expect((await find(after, appId, ada.access_token)).body.map((note: { _id: unknown }) => note._id)).toEqual([
      { $oid: "65a1b2c3d4e5f60718293a4b" },
      "second",
      { $numberInt: "3" },
      { $numberInt: "4" },
    ]);

    // The pending registration is confirmed with the token its mail carried.
    const { token, tokenId } = mailAfter.body.messages[0];
    const confirmed = await call(after, "confirmUser", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/confirm`,
      payload: { token, tokenId },
    });
    expect(confirmed.response.statusCode).toBe(200);

    // Deleting the user removes what it owned on the copy, as on the original.
    const deleted = await call(after, "deleteUser", {
      method: "DELETE",
      url: `${base}/auth/delete`,
      headers: bearer(login.body.access_token),
    });
    expect(deleted.response.statusCode).toBe(204);
    expect((await getProfile(after, refreshed.body.access_token)).response.statusCode).toBe(401);
  });
});
