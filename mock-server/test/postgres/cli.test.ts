/**
 * The command line with a database: starts it refuses (each with one line and a non-zero exit), an
 * exported app folder brought over and loaded again on restart (updated, not duplicated), and the
 * import of `mongoexport` files (streamed, all or nothing, bad lines by number, lone surrogates as U+FFFD).
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeText, jsonFromDatabase } from "../../src/store/postgres/text-encoding.ts";
import { ensureBuilt, killAll, runCli, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

const secret = "cli-test-signing-secret-0123456789";
const defaultApp = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "apps", "local-app");
let database: TestDatabase;
let scratch: string;

beforeAll(async () => {
  await ensureBuilt();
  database = await emulatorDatabase("cli");
  scratch = mkdtempSync(join(tmpdir(), "emulator-cli-"));
}, 60_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

const oneLine = (text: string) => text.trim().split("\n")[0]!;

describe("starting with --database", () => {
  it("refuses without a signing secret, with a bad URL, or with --data-dir", async () => {
    const noSecret = await runCli(["--database", database.url, "--port", "0"], { MOCK_SIGNING_SECRET: "" });
    expect(noSecret.code).toBe(2);
    expect(oneLine(noSecret.stderr)).toMatch(/^--database needs --signing-secret/);
    const badUrl = await runCli(["--database", "mysql://db/x", "--signing-secret", secret]);
    expect(badUrl.code).toBe(2);
    expect(oneLine(badUrl.stderr)).toMatch(/^--database: 'mysql:\/\/…' is not a PostgreSQL URL/);
    const both = await runCli(["--database", database.url, "--signing-secret", secret, "--data-dir", scratch]);
    expect(both.code).toBe(2);
    expect(oneLine(both.stderr)).toMatch(/do not go together/);
  });

  it("stops with one line and exit 1 when the database cannot be reached or is newer", async () => {
    const unreachable = await runCli(["--database", "postgres://u@127.0.0.1:1/x", "--signing-secret", secret]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr.trim()).toMatch(/^Cannot reach the database at 127\.0\.0\.1:1\/x: [^\n]+$/);

    const future = await emulatorDatabase("future");
    try {
      await adminQuery(future.url, "INSERT INTO schema_migrations (version, name) VALUES (99999, 'future')");
      const newer = await runCli(["--database", future.url, "--signing-secret", secret]);
      expect(newer.code).toBe(1);
      expect(newer.stderr.trim()).toMatch(
        /^Cannot prepare the database at .*: the database schema is version 99999, newer than this server's \d+: run a newer server$/,
      );
    } finally {
      await future.drop();
    }
  });
});

describe("an exported app folder with --database", () => {
  it("is stored once, and a restart with the folder updates it", async () => {
    const folder = join(scratch, "exported-app");
    cpSync(defaultApp, folder, { recursive: true });
    const realmConfig = join(folder, "realm_config.json");
    const config = JSON.parse(readFileSync(realmConfig, "utf8"));
    writeFileSync(realmConfig, JSON.stringify({ ...config, app_id: "exported-app", name: "first" }));
    const args = ["--database", database.url, "--signing-secret", secret, "--app", folder];
    const first = await startEmulatorProcess(args);
    await first.stop();
    writeFileSync(realmConfig, JSON.stringify({ ...config, app_id: "exported-app", name: "second" }));
    const second = await startEmulatorProcess(args);
    try {
      const list = (await expectFetchContract("listApps", await fetch(`${second.url}/_mock/v1/apps`))) as {
        apps: { appId: string }[];
      };
      expect(list.apps.filter((a) => a.appId === "exported-app")).toHaveLength(1);
      const app = (await expectFetchContract("getApp", await fetch(`${second.url}/_mock/v1/apps/exported-app`))) as {
        config: { name?: string };
      };
      expect(app.config.name).toBe("second");
    } finally {
      await second.stop();
    }
  });
});

describe("import", () => {
  beforeAll(async () => {
    // The app the files go into (a server started on the database would have made it).
    await adminQuery(
      database.url,
      "INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('local-app', 'd', 0, '{}') ON CONFLICT DO NOTHING",
    );
  });

  const importTo = (collection: string, file: string) =>
    runCli([
      "import",
      "--database",
      database.url,
      "--app-id",
      "local-app",
      "--db",
      "shop",
      "--collection",
      collection,
      file,
    ]);

  async function count(collection: string): Promise<number> {
    const { rows } = await adminQuery(
      database.url,
      "SELECT count(*)::int AS n FROM documents WHERE app_id = 'local-app' AND db = 'shop' AND coll = $1",
      [collection],
    );
    return rows[0].n as number;
  }

  // 20,000 documents through a command of its own: ~7 s here alone, three times that on a busy machine.
  it("streams a large canonical Extended JSON file into a collection, every BSON type intact", async () => {
    const file = join(scratch, "products.json");
    const lines = Array.from({ length: 20_000 }, (_, i) =>
      JSON.stringify({
        _id: { $oid: i.toString(16).padStart(24, "0") },
        n: { $numberInt: String(i) },
        big: { $numberLong: "9007199254740993" },
        price: { $numberDecimal: "1.10" },
        at: { $date: { $numberLong: "1700000000000" } },
        raw: { $binary: { base64: "AQID", subType: "00" } },
        tags: [["a"], { deep: [{ $numberDouble: "1.5" }] }],
        text: "U+0000: \u0000, U+E000: \uE000",
        // Half of a surrogate pair, as a broken export may hold it: read as U+FFFD.
        half: "\ud83d!",
      }),
    );
    writeFileSync(file, `${lines.join("\n")}\n`);
    const result = await importTo("products", file);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Imported 20000 documents into local-app shop\.products/);
    expect(await count("products")).toBe(20_000);
    const { rows } = await adminQuery(
      database.url,
      "SELECT ejson FROM documents WHERE app_id = 'local-app' AND db = 'shop' AND coll = 'products' AND id_key = $1",
      [`o:${(7).toString(16).padStart(24, "0")}`],
    );
    // Stored with the store's escape for U+0000 (text-encoding.ts), which gives the line back.
    expect(rows[0].ejson).toContain("U+0000: \uE0000, U+E000: \uE000\uE000");
    expect(JSON.parse(jsonFromDatabase(decodeText(rows[0].ejson)))).toEqual({
      _id: { $oid: "000000000000000000000007" },
      n: { $numberInt: "7" },
      big: { $numberLong: "9007199254740993" },
      price: { $numberDecimal: "1.10" },
      at: { $date: { $numberLong: "1700000000000" } },
      raw: { $binary: { base64: "AQID", subType: "00" } },
      tags: [["a"], { deep: [{ $numberDouble: "1.5" }] }],
      text: "U+0000: \u0000, U+E000: \uE000",
      half: "\ufffd!",
    });
  }, 60_000);

  it("brings the data over whatever the app's limits, and counts it against them", async () => {
    await adminQuery(
      database.url,
      `INSERT INTO apps (app_id, domain_id, created_at, config) VALUES ('small-app', 'ds', 0, '{"limits":{"documents":5}}');
       INSERT INTO app_usage (app_id, max_users, max_sessions_per_user, max_documents, max_document_bytes)
       VALUES ('small-app', 10, 10, 5, 1000000)`,
    );
    const file = join(scratch, "over-limit.json");
    writeFileSync(file, `${Array.from({ length: 20 }, (_, i) => JSON.stringify({ _id: i, n: i })).join("\n")}\n`);
    const result = await runCli([
      "import",
      "--database",
      database.url,
      "--app-id",
      "small-app",
      "--db",
      "shop",
      "--collection",
      "over",
      file,
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const { rows } = await adminQuery(database.url, "SELECT documents FROM app_usage_total('small-app')");
    expect(rows[0].documents).toBe("20");
  });

  it("imports nothing from a file with bad lines, and names them", async () => {
    const file = join(scratch, "bad.json");
    writeFileSync(
      file,
      [
        '{"_id": 1, "ok": true}',
        '{"_id": 1, "again": true}',
        "{not json",
        '{"_id": 2, "when": {"$date": "not a date"}}',
        "[1, 2]",
        '{"_id": 3}',
        '{"_id": 4, "n": {"$numberInt": "four"}}',
        '{"_id": 5, "raw": {"$binary": {"base64": "AQ", "subType": "00"}}}',
        '{"_id": {"$ne": null}}',
        '{"_id": [6]}',
      ].join("\n"),
    );
    const result = await importTo("bad", file);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^8 bad line\(s\): nothing was imported/);
    expect(result.stderr).toMatch(/line 2: its _id is taken/);
    expect(result.stderr).toMatch(/line 3: not JSON/);
    expect(result.stderr).toMatch(/line 4: not valid Extended JSON \(invalid \$date value string: not a date\)/);
    expect(result.stderr).toMatch(/line 5: not a document/);
    expect(result.stderr).toMatch(
      /line 7: not valid Extended JSON \(strconv\.ParseInt: parsing "four": invalid syntax\)/,
    );
    expect(result.stderr).toMatch(/line 8: not valid Extended JSON \(invalid \$binary base64 string: AQ\)/);
    expect(result.stderr).toMatch(/line 9: _id fields may not contain '\$'-prefixed fields: \$ne is not valid/);
    expect(result.stderr).toMatch(/line 10: can't use an array for _id/);
    expect(await count("bad")).toBe(0);
  });

  it("refuses an _id that is in the collection already, and an app that does not exist", async () => {
    const file = join(scratch, "again.json");
    writeFileSync(file, '{"_id": {"$oid": "000000000000000000000007"}}\n');
    const result = await importTo("products", file);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/line 1: its _id is taken/);
    expect(await count("products")).toBe(20_000);
    const missing = await runCli([
      "import",
      "--database",
      database.url,
      "--app-id",
      "no-such-app",
      "--db",
      "d",
      "--collection",
      "c",
      file,
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe("no app with id 'no-such-app' in the database");
  });
});
