/**
 * `--data-dir` saves (runtime/persistence.ts) of the in-memory store: they do not stall requests
 * while a large state is written, they skip a state that did not change, what they write loads back
 * whole, and an app's generated custom-token key survives the restart. (Crash safety: the
 * persistence-crash test, against the bundle.)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportState, StatePersistence, StateText } from "../../src/runtime/persistence.ts";
import type { MemoryAppStore } from "../../src/store/memory/memory-store.ts";
import { anonymousLogin, call, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";
import { listening } from "../helpers/listen.ts";

let app: FastifyInstance;
let url: string;
let dir: string;
beforeAll(async () => {
  ({ app, url } = await listening({ logLevel: "error" }));
  dir = mkdtempSync(join(tmpdir(), "emulator-persistence-"));
});
afterAll(async () => {
  await app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A new app with three collections of documents stored straight in (no HTTP: the test is about the save). */
async function fill(target: FastifyInstance, appId: string, count: number, bytes: number) {
  const created = await target.inject({ method: "POST", url: "/_mock/v1/apps", payload: { appId } });
  expect(created.statusCode).toBe(201);
  for (const collection of ["a", "b", "c"]) fillCollection(target, appId, collection, count, bytes);
}

function fillCollection(target: FastifyInstance, appId: string, collection: string, count: number, bytes: number) {
  const documents = (target.emulator.store.apps.scope(appId) as MemoryAppStore).data.collection("big", collection);
  for (let i = 0; i < count; i++) documents.insert({ _id: `${collection}-${i}`, n: i, text: "x".repeat(bytes) });
}

describe("saving the state to --data-dir", () => {
  it("keeps /health answering quickly while a large state is saved", async () => {
    // About 60 MB of documents in three collections: a save that takes a while.
    await fill(app, "large", 20_000, 1_000);
    const persistence = new StatePersistence(app.emulator, dir);
    const latencies: number[] = [];
    let saved = false;
    const started = performance.now();
    const save = persistence.save().finally(() => {
      saved = true;
    });
    // Health checks one after another for as long as the save runs.
    while (!saved) {
      const sent = performance.now();
      const response = await fetch(`${url}/_mock/v1/health`);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      latencies.push(performance.now() - sent);
    }
    expect(await save).toBe(true);
    const duration = performance.now() - started;
    // Relative bounds, with room for this busy machine (measured: 50–140 checks, the slowest 5–20% of
    // a 0.4–1.1 s save): the checks went on throughout the save, and none waited for half of it.
    // (The former save serialized everything in one go: one check, which waited for all of it.)
    expect(latencies.length, `${latencies.length} checks in a ${duration.toFixed(0)} ms save`).toBeGreaterThanOrEqual(
      10,
    );
    expect(Math.max(...latencies), `${duration.toFixed(0)} ms save`).toBeLessThan(duration / 2);
    // What it wrote is the state.
    const onDisk = JSON.parse(readFileSync(persistence.file, "utf8"));
    const exported = await exportState(app.emulator);
    expect({ ...onDisk, exportedAt: "" }).toEqual({ ...exported, exportedAt: "" });
  }, 60_000);
});

describe("exporting the state (GET /_mock/v1/state)", () => {
  it("answers a large state in pieces made a slice at a time: /health keeps answering, and the text is the state", async () => {
    // The "large" app of the test above (about 60 MB), or a new one when this test runs alone.
    if (!(await app.emulator.apps.get("large"))) await fill(app, "large", 20_000, 1_000);
    const latencies: number[] = [];
    let exported = false;
    const started = performance.now();
    const exporting = fetch(`${url}/_mock/v1/state`)
      .then(async (response) => {
        expect(response.status).toBe(200);
        return response.text();
      })
      .finally(() => {
        exported = true;
      });
    while (!exported) {
      const sent = performance.now();
      const response = await fetch(`${url}/_mock/v1/health`);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      latencies.push(performance.now() - sent);
    }
    const text = await exporting;
    const duration = performance.now() - started;
    // As the save's bounds above: checks went on throughout, none waited for half of it. (The
    // former export built and serialized the state in one go, and past ~512 MB of text answered 500.)
    expect(latencies.length, `${latencies.length} checks in a ${duration.toFixed(0)} ms export`).toBeGreaterThanOrEqual(
      10,
    );
    expect(Math.max(...latencies), `${duration.toFixed(0)} ms export`).toBeLessThan(duration / 2);
    const state = await exportState(app.emulator);
    expect({ ...JSON.parse(text), exportedAt: "" }).toEqual({ ...state, exportedAt: "" });
  }, 60_000);
});

// The saves' other properties, on a state of their own: 6 MB in three collections, still several
// of the pieces a save writes (1 MB) and keeps its text in (256 KB) per collection, a tenth of the
// one above (which took most of this file's time to write, read and compare again and again).
describe("saving the state to --data-dir, then loading it", () => {
  let source: FastifyInstance;
  let sourceDir: string;
  beforeAll(async () => {
    source = await testApp({ logLevel: "error" });
    sourceDir = mkdtempSync(join(tmpdir(), "emulator-persistence-"));
    await fill(source, "large", 2_000, 1_000);
  });
  afterAll(async () => {
    await source.close();
    rmSync(sourceDir, { recursive: true, force: true });
  });

  it("skips a state that did not change, and writes again only what changed after a write", async () => {
    const persistence = new StatePersistence(source.emulator, sourceDir);
    await persistence.save();
    expect(await persistence.save()).toBe(false);
    const inserted = await source.inject({
      method: "POST",
      url: "/_mock/v1/apps/large/data/big/b",
      payload: { documents: [{ _id: "one-more", n: -1 }] },
    });
    expect(inserted.statusCode).toBe(201);
    expect(await persistence.save()).toBe(true);
    const onDisk = JSON.parse(readFileSync(persistence.file, "utf8"));
    const exported = await exportState(source.emulator);
    expect({ ...onDisk, exportedAt: "" }).toEqual({ ...exported, exportedAt: "" });
    expect(await persistence.save()).toBe(false);
  });

  it("loads what it saved into another emulator: documents, apps, the default app's generated key", async () => {
    const persistence = new StatePersistence(source.emulator, sourceDir);
    await persistence.save();
    const keyOf = async (target: FastifyInstance) =>
      (await target.emulator.apps.get("local-app"))!.config.providers!["custom-token"]!.signingKey;
    const restarted = await listening({ logLevel: "error" });
    try {
      // A fresh start generates a key of its own, until the saved state is loaded.
      expect(await keyOf(restarted.app)).not.toBe(await keyOf(source));
      const loader = new StatePersistence(restarted.app.emulator, sourceDir);
      await loader.load();
      expect(await keyOf(restarted.app)).toBe(await keyOf(source));
      const count = await restarted.app.inject({ method: "GET", url: "/_mock/v1/apps/large/data/big/b?limit=1" });
      expect(count.json().total).toBe(2_001);
      // Loaded and unchanged: nothing to save.
      expect(await loader.save()).toBe(false);
    } finally {
      await restarted.app.close();
    }
  });
});

describe("starting again on --data-dir", () => {
  it("keeps a suspended database trigger suspended when the same settings are given again", async () => {
    const { startServer } = await import("../../src/server.ts");
    const dataDir = mkdtempSync(join(tmpdir(), "emulator-restart-"));
    const configFile = join(dataDir, "config.json");
    const config = {
      functions: { seen: { source: "exports = () => {};", private: true } },
      triggers: [
        {
          type: "DATABASE",
          name: "notes",
          functionName: "seen",
          database: "d",
          collection: "notes",
          operationTypes: ["INSERT"],
        },
      ],
    };
    writeFileSync(configFile, JSON.stringify({ apps: [{ appId: "kept", config }] }));
    const start = () =>
      startServer({
        port: 0,
        logLevel: "silent",
        dataDir,
        configFile,
        allowFunctionSource: true,
        saveIntervalMs: 60_000,
      });
    const suspended = async (server: Awaited<ReturnType<typeof start>>) =>
      (await call(server.app, "getApp", { method: "GET", url: "/_mock/v1/apps/kept" })).body.suspendedTriggers;
    try {
      const first = await start();
      const data = "/_mock/v1/apps/kept/data/d/notes";
      expect(
        (await first.app.inject({ method: "POST", url: data, payload: { documents: [{ n: 1 }] } })).statusCode,
      ).toBe(201);
      expect((await first.app.inject({ method: "DELETE", url: data })).statusCode).toBe(204);
      const made = await suspended(first);
      expect(made).toEqual([
        { name: "notes", since: expect.any(String), reason: "the collection d.notes was dropped" },
      ]);
      await first.close();

      const second = await start();
      try {
        expect(await suspended(second)).toEqual(made);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("applies this start's settings over the kept apps and keeps their users and key", async () => {
    const { startServer } = await import("../../src/server.ts");
    const dataDir = mkdtempSync(join(tmpdir(), "emulator-restart-"));
    const start = (webUrl: string) =>
      startServer({ port: 0, logLevel: "silent", dataDir, webUrl, saveIntervalMs: 60_000 });
    const links = async (server: Awaited<ReturnType<typeof start>>) => {
      const config = (await server.emulator.apps.get("local-app"))!.config;
      const userpass = config.providers!["local-userpass"]!;
      return [userpass.emailConfirmationUrl, userpass.resetPasswordUrl];
    };
    try {
      const first = await start("http://127.0.0.1:5180");
      expect(await links(first)).toEqual(["http://127.0.0.1:5180/confirm", "http://127.0.0.1:5180/reset-password"]);
      const created = await first.app.inject({
        method: "POST",
        url: "/_mock/v1/apps/local-app/users",
        payload: { email: "kept@example.com", password: "secret-1", confirmed: true },
      });
      expect(created.statusCode).toBe(201);
      const key = (await first.emulator.apps.get("local-app"))!.config.providers!["custom-token"]!.signingKey;
      await first.close();

      const second = await start("http://127.0.0.1:5190");
      try {
        expect(await links(second)).toEqual(["http://127.0.0.1:5190/confirm", "http://127.0.0.1:5190/reset-password"]);
        const login = await second.app.inject({
          method: "POST",
          url: "/api/client/v2.0/app/local-app/auth/providers/local-userpass/login",
          payload: { username: "kept@example.com", password: "secret-1" },
        });
        expect(login.statusCode).toBe(200);
        expect((await second.emulator.apps.get("local-app"))!.config.providers!["custom-token"]!.signingKey).toBe(key);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a store's reading of its state", () => {
  it("is written as the same JSON as the in-memory snapshot renders (one writer for both)", async () => {
    const small = await testApp();
    try {
      const appId = await newOpenApp(small);
      const { access_token: token } = await anonymousLogin(small, appId);
      // A document a user wrote (it has an owner) and one the control API wrote (it has none).
      await mongoAction(small, appId, token, "insertOne", {
        database: "d",
        collection: "c",
        document: { _id: 1, text: "é\u2028" },
      });
      await call(small, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/d/c`,
        payload: { documents: [{ _id: 2, n: { $numberLong: "9007199254740993" } }] },
      });
      const text = new StateText(small.emulator);
      const rendered = JSON.parse((await text.render()).pieces.join(""));
      const pieces: string[] = [];
      for await (const piece of text.piecesOf(await small.emulator.store.readState())) pieces.push(piece);
      const read = JSON.parse(pieces.join(""));
      expect(read.apps.find((a: { appId: string }) => a.appId === appId).collections[0].owners).toHaveLength(1);
      expect({ ...read, exportedAt: "" }).toEqual({ ...rendered, exportedAt: "" });
    } finally {
      await small.close();
    }
  });
});
