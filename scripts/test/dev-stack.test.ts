/**
 * `npm start` (scripts/dev-stack.mjs): its options, the auth modes it gives the web app, and its
 * emulator part started as the script starts it — the e-mail links follow the web app's port, the
 * seed is applied on a fresh start, and a restart keeps the state with the new start's settings.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  applySeed,
  authModesOf,
  DevStackUsageError,
  emulatorArgs,
  emulatorConfig,
  localUserpassOverrides,
  oauthProvidersOf,
  parseDevStackArgs,
  prepareDataDir,
  readSeed,
  waitForHealth,
} from "../dev-stack-lib.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const appDir = join(root, "mock-server/apps/local-app");

describe("npm start's options", () => {
  it("defaults to ports 4000 and 5173, kept state and e-mail modes", () => {
    expect(parseDevStackArgs([], {})).toEqual({
      emulatorPort: 4000,
      webPort: 5173,
      dataDir: null,
      fresh: false,
      authFunctions: false,
      help: false,
    });
  });

  it("takes MOCK_PORT, WEB_PORT, DEV_STACK_DATA_DIR, --fresh and --auth-functions", () => {
    const env = { MOCK_PORT: "4100", WEB_PORT: "5180", DEV_STACK_DATA_DIR: "/tmp/state" };
    expect(parseDevStackArgs(["--fresh", "--auth-functions"], env)).toMatchObject({
      emulatorPort: 4100,
      webPort: 5180,
      dataDir: "/tmp/state",
      fresh: true,
      authFunctions: true,
    });
  });

  it.each([
    [["--frsh"], {}, "Unknown option '--frsh'"],
    [[], { WEB_PORT: "web" }, "WEB_PORT must be a port number"],
    [[], { MOCK_PORT: "70000" }, "MOCK_PORT must be a port number"],
    [[], { MOCK_PORT: "5173" }, "MOCK_PORT and WEB_PORT must differ"],
  ])("refuses %j %j", (argv, env, message) => {
    expect(() => parseDevStackArgs(argv, env)).toThrow(DevStackUsageError);
    expect(() => parseDevStackArgs(argv, env)).toThrow(message);
  });
});

describe("the web app's auth modes, from the app's e-mail/password settings", () => {
  it.each([
    [{}, "email", "email"],
    [{ runConfirmationFunction: true, runResetFunction: true }, "function", "function"],
    [{ autoConfirm: true, runConfirmationFunction: true }, "auto", "email"],
    [{ runResetFunction: true }, "email", "function"],
  ])("%j → confirmation %s, reset %s", (settings, confirmation, reset) => {
    expect(authModesOf(settings)).toEqual({ VITE_AUTH_CONFIRMATION: confirmation, VITE_AUTH_RESET: reset });
  });

  it("offers the OAuth 2.0 providers the default app enables", () => {
    expect(oauthProvidersOf(appDir)).toBe("google,apple,facebook");
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address !== "object") throw new Error("no port");
  return address.port;
}

const running = new Set<ChildProcess>();
// As `npm start`: the emulator bundled from the current sources, then run from the bundle.
beforeAll(() => {
  const build = spawnSync(process.execPath, [join(root, "mock-server/scripts/build.mjs")], { stdio: "inherit" });
  expect(build.status).toBe(0);
});

afterEach(async () => {
  for (const child of running) await stopEmulator(child);
});

async function stopEmulator(child: ChildProcess) {
  running.delete(child);
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Prepares the data folder and starts the emulator as `npm start` does, on a free port. */
async function startAsDevStack(dataDir: string, options: { webPort: number; fresh: boolean; authFunctions: boolean }) {
  const webUrl = `http://127.0.0.1:${options.webPort}`;
  const overrides = localUserpassOverrides({ webUrl, authFunctions: options.authFunctions });
  const prepared = prepareDataDir(dataDir, { fresh: options.fresh, overrides, appDir });
  const configFile = join(dataDir, "emulator-config.json");
  writeFileSync(configFile, JSON.stringify(emulatorConfig(overrides)));
  const emulatorPort = await freePort();
  const child = spawn(
    process.execPath,
    ["mock-server/dist/cli.js", ...emulatorArgs({ emulatorPort, webUrl, dataDir, configFile })],
    { cwd: root, stdio: "ignore" },
  );
  running.add(child);
  const url = `http://127.0.0.1:${emulatorPort}`;
  await waitForHealth(url, { isAlive: () => child.exitCode === null });
  return { ...prepared, url, child };
}

const json = { "content-type": "application/json" };
const clientApi = (url: string) => `${url}/api/client/v2.0/app/local-app`;

async function register(url: string, email: string) {
  const reply = await fetch(`${clientApi(url)}/auth/providers/local-userpass/register`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ email, password: "secret-1" }),
  });
  expect(reply.status).toBe(201);
}

async function login(url: string, username: string, password: string) {
  return fetch(`${clientApi(url)}/auth/providers/local-userpass/login`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ username, password }),
  });
}

async function confirmationLinks(url: string, to: string): Promise<string[]> {
  const reply = await fetch(`${url}/_mock/v1/mail?to=${encodeURIComponent(to)}&wait=5000`);
  const { messages } = (await reply.json()) as { messages: { links: string[] }[] };
  return messages.flatMap((m) => m.links);
}

async function localUserpassConfig(url: string) {
  const reply = await fetch(`${url}/_mock/v1/apps/local-app`);
  return ((await reply.json()) as { config: { providers: { "local-userpass": Record<string, unknown> } } }).config
    .providers["local-userpass"];
}

describe("the emulator as npm start runs it", () => {
  it("links to the web app's port, applies the seed on a fresh start, keeps the state with the next start's settings", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dev-stack-"));
    try {
      const seed = readSeed(join(root, "scripts/dev-seed.json"));
      const first = await startAsDevStack(dataDir, { webPort: 5999, fresh: false, authFunctions: false });
      expect(first.fresh).toBe(true);
      expect(authModesOf(first.localUserpass)).toEqual({ VITE_AUTH_CONFIRMATION: "email", VITE_AUTH_RESET: "email" });
      await applySeed(first.url, seed);
      const ada = seed.users.find((u) => u.displayName)!;
      expect((await login(first.url, ada.email, ada.password)).status).toBe(200);
      const notes = await fetch(`${first.url}/_mock/v1/apps/local-app/data/notes-app/notes`);
      const { documents } = (await notes.json()) as { documents: { title: string; version: unknown }[] };
      expect(documents.map((d) => d.title).sort()).toEqual(
        seed.users.flatMap((u) => (u.notes ?? []).map((n) => n.title)).sort(),
      );
      await register(first.url, "new@example.com");
      expect(await confirmationLinks(first.url, "new@example.com")).toEqual([
        expect.stringMatching(/^http:\/\/127\.0\.0\.1:5999\/confirm\?token=/),
      ]);
      await stopEmulator(first.child);

      // Restarted on another web port, with the function modes: the accounts are still there.
      const second = await startAsDevStack(dataDir, { webPort: 6001, fresh: false, authFunctions: true });
      expect(second.fresh).toBe(false);
      expect(authModesOf(second.localUserpass)).toEqual({
        VITE_AUTH_CONFIRMATION: "function",
        VITE_AUTH_RESET: "function",
      });
      expect((await login(second.url, ada.email, ada.password)).status).toBe(200);
      expect(await localUserpassConfig(second.url)).toMatchObject({
        emailConfirmationUrl: "http://127.0.0.1:6001/confirm",
        resetPasswordUrl: "http://127.0.0.1:6001/reset-password",
        runConfirmationFunction: true,
        runResetFunction: true,
      });
      await stopEmulator(second.child);

      // --fresh: nothing kept; the seed is due again.
      const third = await startAsDevStack(dataDir, { webPort: 6001, fresh: true, authFunctions: false });
      expect(third.fresh).toBe(true);
      expect((await login(third.url, ada.email, ada.password)).status).toBe(401);
      expect(await localUserpassConfig(third.url)).toMatchObject({
        emailConfirmationUrl: "http://127.0.0.1:6001/confirm",
        runConfirmationFunction: false,
      });
    } finally {
      for (const child of running) await stopEmulator(child);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("refuses a seed that is not the documented shape, naming the problem", () => {
    const dir = mkdtempSync(join(tmpdir(), "dev-seed-"));
    try {
      const file = join(dir, "seed.json");
      writeFileSync(file, JSON.stringify({ users: [{ email: "a@example.com" }] }));
      expect(() => readSeed(file)).toThrow("users[0] needs an email and a password");
      writeFileSync(file, JSON.stringify({ users: [{ email: "a@example.com", password: "x", notes: [{}] }] }));
      expect(() => readSeed(file)).toThrow("users[0].notes[0] needs a title");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("npm start as a whole", () => {
  /** Runs scripts/dev-stack.mjs until it prints the stack's URLs, and asks the emulator then. */
  async function untilUrlsPrinted(env: NodeJS.ProcessEnv) {
    const child = spawn(process.execPath, ["scripts/dev-stack.mjs"], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no URLs printed within 20 s:\n${output}`)), 20_000);
        const take = (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes("The local stack:")) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout!.on("data", take);
        child.stderr!.on("data", take);
        child.once("exit", (code) => reject(new Error(`npm start exited (${code}):\n${output}`)));
      });
      // At once: the URLs it printed answer, the emulator's and the web app's.
      const status = (url: string) =>
        fetch(url).then(
          (reply) => reply.status,
          (error: Error) => error.message,
        );
      return [
        await status(`http://127.0.0.1:${env.MOCK_PORT}/_mock/v1/health`),
        await status(`http://127.0.0.1:${env.WEB_PORT}/`),
      ];
    } finally {
      process.kill(-child.pid!, "SIGTERM");
      await exited;
    }
  }

  it("starts nothing on a port another server holds, and says which and how to choose another", async () => {
    // A server answering every path, as another emulator (or a stale npm start) does its health.
    const other = createHttpServer((_, reply) => reply.end('{"status":"ok"}'));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const taken = (other.address() as { port: number }).port;
    const dataDir = mkdtempSync(join(tmpdir(), "dev-stack-taken-"));
    try {
      for (const [name, env] of [
        ["MOCK_PORT", { MOCK_PORT: String(taken), WEB_PORT: String(await freePort()) }],
        ["WEB_PORT", { MOCK_PORT: String(await freePort()), WEB_PORT: String(taken) }],
      ] as const) {
        const started = spawnSync(process.execPath, ["scripts/dev-stack.mjs", "--fresh"], {
          cwd: root,
          env: { ...process.env, ...env, DEV_STACK_DATA_DIR: dataDir },
          encoding: "utf8",
          timeout: 20_000,
        });
        expect(started.status, started.stdout + started.stderr).toBe(1);
        expect(started.stderr).toContain(`npm start: port ${taken} (${name}) is in use`);
        expect(started.stderr).toContain(`${name}=${taken + 1} npm start`);
        expect(started.stdout).not.toContain("The local stack:");
        // Nothing was started or prepared: the data folder is as it was.
        expect(readdirSync(dataDir)).toEqual([]);
      }
    } finally {
      other.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("waits for its own emulator, not another one answering on the port", async () => {
    const other = createHttpServer((_, reply) =>
      reply.end(JSON.stringify({ status: "ok", startedAt: new Date(Date.now() - 60_000).toISOString() })),
    );
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
    try {
      await expect(waitForHealth(url, { startedAfter: Date.now(), timeoutMs: 300 })).rejects.toThrow(
        /the emulator did not answer/,
      );
      await expect(waitForHealth(url, { startedAfter: Date.now() - 120_000, timeoutMs: 300 })).resolves.toBeUndefined();
    } finally {
      other.close();
    }
  });

  it("prints the stack's URLs once the emulator and the web app answer, on a first start and with kept state", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "dev-stack-whole-"));
    try {
      for (const start of ["fresh", "kept"]) {
        const env = {
          MOCK_PORT: String(await freePort()),
          WEB_PORT: String(await freePort()),
          DEV_STACK_DATA_DIR: dataDir,
        };
        expect([start, await untilUrlsPrinted(env)]).toEqual([start, [200, 200]]);
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
