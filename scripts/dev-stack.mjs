#!/usr/bin/env node
// `npm start`: the emulator and the web app's dev server together, with their URLs; Ctrl-C or
// SIGTERM stops both. The emulator keeps its state in .data/dev/ (or DEV_STACK_DATA_DIR) between
// runs (a start without it applies scripts/dev-seed.json); its e-mail links point at the web app's
// port, and the web app is configured for the emulator through its VITE_ variables, its auth modes
// included.
// `npm start -- --help` lists the options; the deciding parts live in dev-stack-lib.mjs.
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundle } from "../mock-server/scripts/build.mjs";
import {
  applySeed,
  authModesOf,
  DevStackUsageError,
  devStackUsage,
  emulatorArgs,
  emulatorConfig,
  localUserpassOverrides,
  oauthProvidersOf,
  parseDevStackArgs,
  portFree,
  prepareDataDir,
  readSeed,
  waitForAnswer,
  waitForHealth,
} from "./dev-stack-lib.mjs";
import { runTogether } from "./run-together.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

let options;
try {
  options = parseDevStackArgs(process.argv.slice(2), process.env);
} catch (error) {
  if (!(error instanceof DevStackUsageError)) throw error;
  process.stderr.write(`${error.message}\n\n${devStackUsage}\n`);
  process.exit(2);
}
if (options.help) {
  process.stdout.write(`${devStackUsage}\n`);
  process.exit(0);
}

// A port another server holds (an npm start or npm run mock still running) is said before anything
// starts: the stack would otherwise wait on that server's answers, and --fresh empty the data
// folder the other stack uses.
for (const [port, name] of [
  [options.emulatorPort, "MOCK_PORT"],
  [options.webPort, "WEB_PORT"],
]) {
  if (!(await portFree(port))) {
    process.stderr.write(
      `npm start: port ${port} (${name}) is in use: is another npm start or npm run mock running? ` +
        `Stop it, or choose another port: ${name}=${port + 1} npm start\n`,
    );
    process.exit(1);
  }
}

const emulatorUrl = `http://127.0.0.1:${options.emulatorPort}`;
const webUrl = `http://127.0.0.1:${options.webPort}`;
const dataDir = options.dataDir ? resolve(options.dataDir) : join(root, ".data", "dev");
const seedFile = join(root, "scripts", "dev-seed.json");
const seed = readSeed(seedFile);

// The emulator's bundle, built when a source changed since the last build (esbuild prints what failed).
try {
  await buildBundle();
} catch (error) {
  process.stderr.write(`npm start: building the emulator failed (${error.message.split("\n")[0]})\n`);
  process.exit(1);
}

const overrides = localUserpassOverrides({ webUrl, authFunctions: options.authFunctions });
const { fresh, localUserpass } = prepareDataDir(dataDir, {
  fresh: options.fresh,
  overrides,
  appDir: join(root, "mock-server/apps/local-app"),
});
const configFile = join(dataDir, "emulator-config.json");
writeFileSync(configFile, `${JSON.stringify(emulatorConfig(overrides), null, 2)}\n`);

const modes = authModesOf(localUserpass);
const env = {
  VITE_APP_SERVICES_BASE_URL: emulatorUrl,
  VITE_APP_SERVICES_APP_ID: "local-app",
  VITE_EMAILJS_ORIGIN: emulatorUrl,
  VITE_EMAILJS_PUBLIC_KEY: seed.emailjsAccount?.publicKey ?? "local-public-key",
  ...modes,
  VITE_AUTH_PROVIDERS: oauthProvidersOf(join(root, "mock-server/apps/local-app")),
};
const spawnedAt = Date.now();
const { commands, done, stop } = runTogether([
  {
    name: "emulator",
    command: process.execPath,
    args: [
      "mock-server/dist/cli.js",
      ...emulatorArgs({ emulatorPort: options.emulatorPort, webUrl, dataDir, configFile }),
    ],
    cwd: root,
    color: "cyan",
  },
  {
    name: "web",
    command: process.execPath,
    args: [
      join(root, "node_modules/vite/bin/vite.js"),
      "--port",
      String(options.webPort),
      "--strictPort",
      "--host",
      "127.0.0.1",
    ],
    cwd: join(root, "web"),
    env,
    color: "magenta",
  },
]);
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
// A stack that did not come up ends in failure, whatever its commands did when stopped.
let failedToStart = false;
done.then((code) => process.exit(failedToStart ? code || 1 : code));

const [emulator, web] = commands;
const modeText = `confirmation by ${modes.VITE_AUTH_CONFIRMATION === "function" ? "function (confirmUser)" : modes.VITE_AUTH_CONFIRMATION === "auto" ? "nobody (automatic)" : "e-mail link"}, password reset by ${modes.VITE_AUTH_RESET === "function" ? "function (resetPassword)" : "e-mail link"}`;
// The URLs are printed once both answer, on every start, kept state or not.
try {
  await Promise.all([
    waitForHealth(emulatorUrl, { isAlive: () => !emulator.exited, startedAfter: spawnedAt }).then(
      () => fresh && applySeed(emulatorUrl, seed),
    ),
    waitForAnswer(`${webUrl}/`, { what: "the web app's dev server", isAlive: () => !web.exited }),
  ]);
} catch (error) {
  process.stderr.write(`npm start: ${error.message}\n`);
  failedToStart = true;
  stop("SIGTERM");
}
if (!failedToStart) {
  const users = seed.users.map((u) => `${u.email} / ${u.password}${u.confirmed === false ? " (not confirmed)" : ""}`);
  process.stdout.write(
    `\nThe local stack:\n  web app     ${webUrl}\n  emulator    ${emulatorUrl}  (App Services and EmailJS)\n  inspector   ${emulatorUrl}/_mock/\n  control API ${emulatorUrl}/_mock/v1\n` +
      `  state       ${options.dataDir ? dataDir : ".data/dev/"} (${fresh ? "new: seeded from scripts/dev-seed.json" : "kept from the last run; --fresh starts again"})\n` +
      `  accounts    ${fresh ? "" : "(seeded at the first run) "}${users.join(", ")}\n  auth        ${modeText}\n` +
      `  providers   ${env.VITE_AUTH_PROVIDERS === "none" ? "none" : `${env.VITE_AUTH_PROVIDERS.replaceAll(",", ", ")} through the fake identity provider (pick or add any account)`}\n\n`,
  );
}
