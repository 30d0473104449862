// The parts of `npm start` (scripts/dev-stack.mjs) that decide something, kept apart so the tests
// (scripts/test/dev-stack.test.ts) can check them: the options, the kept state and its settings, the
// emulator's command line, the web app's auth modes and the seed.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

export const devAppId = "local-app";
export const stateFile = "state.json";

export const devStackUsage = `Usage: npm start [-- options]

Runs the emulator and the web app's dev server together. State is kept between runs in .data/dev/
(git-ignored); a start without kept state applies the seed (scripts/dev-seed.json).

Options:
  --fresh            forget the kept state and start again from the seed
  --auth-functions   the app confirms new accounts and resets passwords with its functions
                     (confirmUser, resetPassword) instead of e-mail links
  -h, --help         show this help

Environment:
  MOCK_PORT            the emulator's port (default 4000)
  WEB_PORT             the web app's port (default 5173); the app's e-mail links follow it
  DEV_STACK_DATA_DIR   where the state is kept (default .data/dev)`;

export class DevStackUsageError extends Error {
  name = "DevStackUsageError";
}

function port(name, raw, fallback) {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new DevStackUsageError(`${name} must be a port number (1-65535), not '${raw}'`);
  return n;
}

/** `npm start`'s options, from its arguments and environment. */
export function parseDevStackArgs(argv, env) {
  const options = {
    emulatorPort: port("MOCK_PORT", env.MOCK_PORT, 4000),
    webPort: port("WEB_PORT", env.WEB_PORT, 5173),
    dataDir: env.DEV_STACK_DATA_DIR || null,
    fresh: false,
    authFunctions: false,
    help: false,
  };
  for (const arg of argv) {
    if (arg === "--fresh") options.fresh = true;
    else if (arg === "--auth-functions") options.authFunctions = true;
    else if (arg === "--help" || arg === "-h") options.help = true;
    else throw new DevStackUsageError(`Unknown option '${arg}'`);
  }
  if (options.emulatorPort === options.webPort)
    throw new DevStackUsageError(`MOCK_PORT and WEB_PORT must differ (both are ${options.webPort})`);
  return options;
}

/** The e-mail/password settings `npm start` gives the app, whatever the kept state says. */
export function localUserpassOverrides({ webUrl, authFunctions }) {
  return {
    emailConfirmationUrl: `${webUrl}/confirm`,
    resetPasswordUrl: `${webUrl}/reset-password`,
    runConfirmationFunction: authFunctions,
    runResetFunction: authFunctions,
  };
}

/**
 * The web app's auth modes (VITE_AUTH_CONFIRMATION, VITE_AUTH_RESET) for an app's e-mail/password
 * settings, in the emulator's form (the control document's LocalUserpassConfig).
 */
export function authModesOf(settings) {
  return {
    VITE_AUTH_CONFIRMATION: settings.autoConfirm ? "auto" : settings.runConfirmationFunction ? "function" : "email",
    VITE_AUTH_RESET: settings.runResetFunction ? "function" : "email",
  };
}

/**
 * The web app's VITE_AUTH_PROVIDERS for an app folder: its enabled OAuth 2.0 providers (Google,
 * Apple, Facebook), which the emulator's fake identity provider serves in the harness.
 */
export function oauthProvidersOf(appDir) {
  const providers = JSON.parse(readFileSync(join(appDir, "auth", "providers.json"), "utf8"));
  const enabled = ["google", "apple", "facebook"].filter((name) => {
    const provider = providers[`oauth2-${name}`];
    return provider !== undefined && provider.disabled !== true;
  });
  return enabled.length > 0 ? enabled.join(",") : "none";
}

/** The e-mail/password settings of an app folder (auth/providers.json), in the emulator's form. */
export function folderLocalUserpass(appDir) {
  const providers = JSON.parse(readFileSync(join(appDir, "auth", "providers.json"), "utf8"));
  const config = providers["local-userpass"]?.config ?? {};
  const settings = {};
  for (const key of ["autoConfirm", "runConfirmationFunction", "runResetFunction"])
    if (typeof config[key] === "boolean") settings[key] = config[key];
  for (const key of ["emailConfirmationUrl", "resetPasswordUrl"])
    if (typeof config[key] === "string") settings[key] = config[key];
  return settings;
}

/**
 * Gets the data folder ready before the emulator starts. `fresh` forgets the kept state. The
 * emulator applies the settings this start gives it (the web app's URL in the links, the auth modes)
 * over kept state, so the app's e-mail/password settings are the folder's with those overrides.
 * Returns whether the start is fresh (nothing kept: the seed is due) and those settings.
 */
export function prepareDataDir(dataDir, { fresh, overrides, appDir }) {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, stateFile);
  if (fresh) rmSync(file, { force: true });
  return { fresh: !existsSync(file), localUserpass: { ...folderLocalUserpass(appDir), ...overrides } };
}

/** The emulator's `--config` file: the app's auth modes, for a start without kept state. */
export function emulatorConfig(overrides, appId = devAppId) {
  return {
    apps: [
      {
        appId,
        config: {
          providers: {
            "local-userpass": {
              runConfirmationFunction: overrides.runConfirmationFunction,
              runResetFunction: overrides.runResetFunction,
            },
          },
        },
      },
    ],
  };
}

/** The emulator's command-line arguments (after `cli.js`). */
export function emulatorArgs({ emulatorPort, webUrl, dataDir, configFile }) {
  return ["--port", String(emulatorPort), "--web-url", webUrl, "--data-dir", dataDir, "--config", configFile];
}

/** Whether a server can listen on `port` of 127.0.0.1 now. */
export function portFree(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** Resolves once the emulator answers its health check (it has loaded the kept state by then). */
export function waitForHealth(emulatorUrl, { startedAfter, ...options } = {}) {
  // (With `startedAfter`, only an emulator started since then: not another one answering on the port.)
  const accept =
    startedAfter === undefined
      ? undefined
      : async (reply) => Date.parse((await reply.json().catch(() => ({}))).startedAt) >= startedAfter;
  return waitForAnswer(`${emulatorUrl}/_mock/v1/health`, { what: "the emulator", accept, ...options });
}

/**
 * Resolves once `url` answers a GET with a 2xx status (that `accept` takes, when given); rejects
 * when `isAlive` says its server ended, or at the timeout.
 */
export async function waitForAnswer(url, { what = url, timeoutMs = 30_000, isAlive = () => true, accept } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const reply = await fetch(url);
      if (reply.ok && (accept === undefined || (await accept(reply)))) return;
    } catch {
      // Not listening yet.
    }
    if (!isAlive()) throw new Error(`${what} stopped before it was ready`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer at ${url} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function fail(source, message) {
  throw new Error(`${source}: ${message}`);
}

/** The seed file, checked: users (with notes) and an EmailJS account. */
export function readSeed(path) {
  let seed;
  try {
    seed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    fail(path, `cannot read the seed (${error.message})`);
  }
  if (typeof seed !== "object" || seed === null || Array.isArray(seed)) fail(path, "must be a JSON object");
  const users = seed.users ?? [];
  if (!Array.isArray(users)) fail(path, "users must be an array");
  for (const [i, user] of users.entries()) {
    const at = `users[${i}]`;
    if (typeof user?.email !== "string" || typeof user.password !== "string")
      fail(path, `${at} needs an email and a password (strings)`);
    if (user.confirmed !== undefined && typeof user.confirmed !== "boolean")
      fail(path, `${at}.confirmed must be true or false`);
    if (user.displayName !== undefined && typeof user.displayName !== "string")
      fail(path, `${at}.displayName must be a string`);
    if (!Array.isArray(user.notes ?? [])) fail(path, `${at}.notes must be an array`);
    for (const [j, note] of (user.notes ?? []).entries()) {
      if (typeof note?.title !== "string" || (note.body !== undefined && typeof note.body !== "string"))
        fail(path, `${at}.notes[${j}] needs a title (and an optional body), strings`);
    }
  }
  if (seed.emailjsAccount !== undefined && (typeof seed.emailjsAccount !== "object" || seed.emailjsAccount === null))
    fail(path, "emailjsAccount must be an object (the control API's CreateEmailJsAccountRequest)");
  return { users, emailjsAccount: seed.emailjsAccount ?? null };
}

async function control(emulatorUrl, method, path, body) {
  const reply = await fetch(`${emulatorUrl}/_mock/v1${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  if (!reply.ok) throw new Error(`seed: ${method} /_mock/v1${path} answered ${reply.status}: ${await reply.text()}`);
  return reply.status === 204 ? null : reply.json();
}

/**
 * Applies the seed through the control API: the EmailJS account, then each user (confirmed unless
 * it says otherwise), its display name (custom user data in notes-app.profiles) and its notes
 * (notes-app.notes, newest first as listed). `now` dates the notes.
 */
export async function applySeed(emulatorUrl, seed, { appId = devAppId, now = new Date() } = {}) {
  if (seed.emailjsAccount) await control(emulatorUrl, "POST", "/emailjs/accounts", seed.emailjsAccount);
  const app = `/apps/${encodeURIComponent(appId)}`;
  for (const user of seed.users) {
    const created = await control(emulatorUrl, "POST", `${app}/users`, {
      email: user.email,
      password: user.password,
      confirmed: user.confirmed ?? true,
    });
    if (user.displayName)
      await control(emulatorUrl, "POST", `${app}/data/notes-app/profiles`, {
        documents: [{ user_id: created.id, display_name: user.displayName }],
      });
    const notes = user.notes ?? [];
    if (notes.length === 0) continue;
    const documents = notes.map((note, i) => {
      // A minute apart, the first listed the newest.
      const at = { $date: new Date(now.getTime() - i * 60_000).toISOString() };
      return {
        owner_id: created.id,
        title: note.title,
        body: note.body ?? "",
        createdAt: at,
        updatedAt: at,
        version: 1,
      };
    });
    await control(emulatorUrl, "POST", `${app}/data/notes-app/notes`, { documents });
  }
}
