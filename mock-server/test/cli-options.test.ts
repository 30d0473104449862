/** The command line refuses bad options at start: a one-line reason, the usage, exit code 2. */
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer } from "../src/server.ts";
import { cli, ensureBuilt, killAll, startEmulatorProcess } from "./helpers/emulator-process.ts";
import { scratchDir } from "./helpers/scratch.ts";

// The bundle of the current sources: a start from it costs a third of one through a TypeScript loader.
beforeAll(() => ensureBuilt(), 60_000);
// The folder of the default app's folder: not an app itself.
const apps = join(import.meta.dirname, "..", "apps");
const defaultApp = join(apps, "local-app");
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: "utf8", timeout: 20_000 });

describe("start-up option checks", () => {
  it.each([
    [["--allowed-hosts", "bad host"], "--allowed-hosts: 'bad host' is not a host name or address"],
    [["--allowed-hosts", "http://notes.example"], "is not a host name or address"],
    [["--function-http-hosts", "api.example.com/v1"], "--function-http-hosts: 'api.example.com/v1' is not a host name"],
    [["--public-url", "notes.example"], "--public-url must be an http(s) URL"],
    [["--control-token", "my token"], "--control-token must be visible ASCII characters without spaces"],
    [["--metrics-token", "jeton-é"], "--metrics-token must be visible ASCII characters without spaces"],
    [["--auth-rate-limit", "lots"], "--auth-rate-limit: 'lots' is not MAX/WINDOW"],
    [["--trust-proxy", "proxy.example"], "--trust-proxy: 'proxy.example' is not true"],
    [["--production", "--allow-function-source"], "--allow-function-source does not go with --production"],
    [["--inspect-functions", "ninety"], "--inspect-functions: 'ninety' is not a port (1 to 65535"],
    [["--inspect-functions", "70000"], "--inspect-functions: '70000' is not a port"],
    [["--production", "--inspect-functions", "9229"], "--inspect-functions does not go with --production"],
    [["--data-dir", "unused", "--save-interval", "0"], "--save-interval: '0' is not a number of seconds"],
    [["--data-dir", "unused", "--save-interval", "soon"], "--save-interval: 'soon' is not a number of seconds"],
    [["--save-interval", "1"], "--save-interval needs --data-dir"],
    [["--database", "postgres://db.example/app", "--trigger-lease", "0"], "--trigger-lease: '0' is not a whole number"],
    [["--trigger-lease", "30"], "--trigger-lease needs --database"],
    [
      ["--identity-provider", "ftp://idp.example"],
      "--identity-provider: 'ftp://idp.example' is not fake, real or an http(s) URL",
    ],
    [
      ["--production", "--identity-provider", "fake"],
      "--identity-provider: the fake identity provider is a testing feature",
    ],
    [["idp", "--client", "oauth2-google"], "--client: 'oauth2-google' is not PROVIDER=CLIENT_ID:SECRET"],
    [["--budgets", "memory=1GiB"], "--budgets: 'memory' is not one of bodies, replies, streams, connections"],
    [["--retention", "mail=1"], "--retention: mail: '1' is not a period from 1m to 3650d (a number with s, m, h or d)"],
    [["--retention", "logs=7d"], "--retention: 'logs' is not one of mail, tokens"],
    [["--budgets", "bodies=1MiB"], "--budgets: bodies: at least 18874368 bytes (18 MiB)"],
    [["--metrics-address", "metrics.example"], "--metrics-address: 'metrics.example' is not [HOST:]PORT"],
    [["--metrics-address", "127.0.0.1:70000"], "--metrics-address: '127.0.0.1:70000' is not [HOST:]PORT"],
    [
      ["--app", apps],
      `--app: ${apps} is not an App Services app export: it has no realm_config.json (${defaultApp} has one)`,
    ],
    [["--app", join(apps, "missing-app")], `--app: ${join(apps, "missing-app")} does not exist`],
    [["idp", "--app", apps], `--app: ${apps} is not an App Services app export`],
    [
      ["--signing-secret-fallbacks", "an-old-signing-secret-0123"],
      "--signing-secret-fallbacks: needs --signing-secret",
    ],
    [
      ["--signing-secret", "the-signing-secret-0123456789", "--signing-secret-fallbacks", "old-0123456789abcdef,short"],
      "--signing-secret-fallbacks: a secret of 5 characters: each must be at least 16",
    ],
    [
      [
        "--signing-secret",
        "the-signing-secret-0123456789",
        "--signing-secret-fallbacks",
        "the-signing-secret-0123456789",
      ],
      "--signing-secret-fallbacks: lists the signing secret itself",
    ],
    [
      [
        "--signing-secret",
        "the-signing-secret-0123456789",
        "--signing-secret-fallbacks",
        Array.from({ length: 5 }, (_, i) => `fallback-secret-${i}-0123456789`).join(","),
      ],
      "--signing-secret-fallbacks: 5 secrets: at most 4",
    ],
  ])("%j is refused", (args, message) => {
    const result = run(...args, "--port", "0");
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(message);
  });

  it("says a port another server holds is in use, and how to choose another", async () => {
    const other = createServer();
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const port = (other.address() as { port: number }).port;
    try {
      const result = run("--port", String(port));
      expect(result.status).toBe(1);
      expect(result.stderr).toBe(
        `Port ${port} on 127.0.0.1 is in use: is another emulator (npm run mock, npm start) running? ` +
          "Stop it, or choose another port with --port (env PORT; 0 = any free port)\n",
      );
      const metrics = run("--port", "0", "--metrics-address", String(port));
      expect(metrics.status).toBe(1);
      expect(metrics.stderr).toBe(`--metrics-address: port ${port} on 127.0.0.1 is in use: choose another\n`);
    } finally {
      other.close();
    }
    // Once listening, the start's error listener is gone: a later error is not taken for the start's.
    const started = await startServer({ port: 0, logLevel: "silent" });
    try {
      expect(started.app.server.listenerCount("error")).toBe(0);
    } finally {
      await started.close();
    }
  });
});

describe("the start's banner", () => {
  afterAll(killAll);

  it("names the default app's HTTPS endpoints with their URLs", async () => {
    const emulator = await startEmulatorProcess([]);
    try {
      expect(emulator.stdout()).toContain(
        `  HTTPS endpoints        GET ${emulator.url}/app/local-app/endpoint/notes/stats\n`,
      );
      const stats = await fetch(`${emulator.url}/app/local-app/endpoint/notes/stats`);
      expect(stats.status).toBe(400);
    } finally {
      await emulator.stop();
    }
  });

  it("says how many fallback secrets' tokens it accepts, read from a file a line each", async () => {
    const file = join(scratchDir("fallbacks-"), "fallbacks");
    writeFileSync(file, "the-old-signing-secret-0123456789\nan-older-signing-secret-0123456789\n");
    const emulator = await startEmulatorProcess([], {
      MOCK_SIGNING_SECRET: "the-new-signing-secret-0123456789",
      MOCK_SIGNING_SECRET_FALLBACKS_FILE: file,
    });
    try {
      expect(emulator.stdout()).toContain(
        "  token secrets          tokens of 2 fallback secrets accepted too (metric appservices_fallback_token_uses_total)\n",
      );
    } finally {
      await emulator.stop();
    }
  });
});
