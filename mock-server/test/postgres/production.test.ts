/**
 * `--production`: a self-hosted App Services server. It needs the database and a signing secret;
 * without a control token there is no control API and no inspector; testing features are refused;
 * no demo app or open EmailJS account; production defaults for password hashing, abuse limits and
 * JSON request logs with no secret in them.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, killAll, runCli, startEmulatorProcess } from "../helpers/emulator-process.ts";
import { expectFetchContract } from "../helpers/fetch-contract.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { watchPath } from "../helpers/watch.ts";

const secret = "production-test-signing-secret-0123456789";
const defaultApp = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "apps", "local-app");
const base = "/api/client/v2.0";
let database: TestDatabase;
let scratch: string;
let folder: string;

beforeAll(async () => {
  await ensureBuilt();
  database = await emulatorDatabase("production");
  scratch = mkdtempSync(join(tmpdir(), "emulator-production-"));
  // An exported app (App Services' folder layout) with an id of its own.
  folder = join(scratch, "exported");
  cpSync(defaultApp, folder, { recursive: true });
  const realmConfig = join(folder, "realm_config.json");
  writeFileSync(realmConfig, JSON.stringify({ ...JSON.parse(readFileSync(realmConfig, "utf8")), app_id: "prod-app" }));
}, 60_000);

afterAll(async () => {
  killAll();
  await database?.drop();
  rmSync(scratch, { recursive: true, force: true });
});

const production = (extra: string[] = []) =>
  startEmulatorProcess([
    "--production",
    "--database",
    database.url,
    "--signing-secret",
    secret,
    "--app",
    folder,
    ...extra,
  ]);

describe("--production", () => {
  it("refuses to start without the database or the signing secret", async () => {
    const noDatabase = await runCli(["--production", "--signing-secret", secret], { DATABASE_URL: "" });
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toMatch(/^--production needs --database/);
    const noSecret = await runCli(["--production", "--database", database.url], { MOCK_SIGNING_SECRET: "" });
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toMatch(/^--production needs --signing-secret/);
  });

  it("serves the exported app only, with no control API, inspector or EmailJS API, JSON logs without secrets", async () => {
    const server = await production(["--log-level", "info"]);
    let stdout = "";
    server.child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    try {
      // The health check stays (load balancers, container healthchecks); nothing else of the control API.
      expect((await fetch(`${server.url}/_mock/v1/health`)).status).toBe(200);
      const control = await fetch(`${server.url}/_mock/v1/apps`);
      expect(control.status).toBe(404);
      expect((await control.json()).error).toMatch(/off in production mode without --control-token/);
      expect((await fetch(`${server.url}/_mock/`)).status).toBe(404);
      const emailjs = await fetch(`${server.url}/api/v1.0/email/send`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(emailjs.status).toBe(404);
      const demo = await fetch(`${server.url}${base}/app/local-app/location`);
      expect(demo.status).toBe(404);

      const login = await fetch(`${server.url}${base}/app/prod-app/auth/providers/anon-user/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      const session = (await expectFetchContract("login", login)) as { access_token: string; refresh_token: string };
      expect(login.status).toBe(200);
      const password = "a-secret-password-123";
      const registered = await fetch(`${server.url}${base}/app/prod-app/auth/providers/local-userpass/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "ann@example.com", password }),
      });
      expect(registered.status).toBe(201);
      // A change stream authenticates by a token in the query: logged redacted.
      const controller = new AbortController();
      await fetch(`${server.url}${watchPath("prod-app", { database: "d", collection: "c" }, session.access_token)}`, {
        signal: controller.signal,
      });
      controller.abort();

      // The password hash has production's cost.
      const { rows } = await adminQuery(database.url, "SELECT password_hash FROM userpass_accounts WHERE email = $1", [
        "ann@example.com",
      ]);
      expect(rows[0].password_hash).toMatch(/^scrypt\$15\$/);

      await server.stop();
      const lines = stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { level: number; req?: { url: string }; msg: string });
      const urls = lines.flatMap((l) => (l.req ? [l.req.url] : []));
      expect(urls.some((u) => u.includes("/local-userpass/register"))).toBe(true);
      expect(urls.some((u) => u.includes("baas_at=%5Bredacted%5D") || u.includes("baas_at=[redacted]"))).toBe(true);
      for (const secretText of [password, session.access_token, session.refresh_token, secret])
        expect(stdout).not.toContain(secretText);
    } finally {
      await server.stop();
    }
  });

  it("limits wrong passwords by default (10 a minute per address)", async () => {
    // The counters are the database's: the logins of the tests before this one count too.
    await adminQuery(database.url, "DELETE FROM rate_limit_counters");
    const server = await production();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 12; i++) {
        const response = await fetch(`${server.url}${base}/app/prod-app/auth/providers/local-userpass/login`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ username: "nobody@example.com", password: `wrong-${i}` }),
        });
        statuses.push(response.status);
        if (response.status === 429) expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
      }
      expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
      expect(statuses.slice(10)).toEqual([429, 429]);
    } finally {
      await server.stop();
    }
  });

  it("with a control token: the control API answers it, and refuses faults, clocks and function source", async () => {
    const token = "production-control-token-0123456789";
    const server = await production(["--control-token", token]);
    const control = (method: string, path: string, body?: unknown, auth = token) =>
      fetch(`${server.url}/_mock/v1${path}`, {
        method,
        headers: {
          authorization: `Bearer ${auth}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    try {
      expect((await control("GET", "/apps", undefined, "wrong")).status).toBe(401);
      const apps = await control("GET", "/apps");
      expect(
        ((await expectFetchContract("listApps", apps)) as { apps: { appId: string }[] }).apps.map((a) => a.appId),
      ).toEqual(expect.arrayContaining(["prod-app"]));
      const fault = await control("POST", "/apps/prod-app/faults", { operationId: "getProfile", status: 500 });
      expect(fault.status).toBe(403);
      expect(await expectFetchContract("addFault", fault)).toMatchObject({ code: "NotInProduction" });
      const clock = await control("POST", "/apps/prod-app/clock", { advanceBy: 3600 });
      expect(clock.status).toBe(403);
      expect(await expectFetchContract("advanceClock", clock)).toMatchObject({ code: "NotInProduction" });
      // Function source is code on the host: a production server takes it from its app folders only.
      const source = await control("POST", "/apps", { config: { functions: { x: { source: "exports = () => 1;" } } } });
      expect(source.status).toBe(403);
      expect(await expectFetchContract("createApp", source)).toMatchObject({ code: "FunctionSourceNotAllowed" });
    } finally {
      await server.stop();
    }
  });
});
