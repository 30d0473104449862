#!/usr/bin/env node
// `npm start`: the emulator and the web app's dev server together, with their URLs; Ctrl-C or
// SIGTERM stops both. The web app is configured for the emulator through its VITE_ variables.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import concurrently from "concurrently";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const emulatorPort = Number(process.env.MOCK_PORT ?? 4000);
const webPort = Number(process.env.WEB_PORT ?? 5173);
const emulatorUrl = `http://127.0.0.1:${emulatorPort}`;
const webUrl = `http://127.0.0.1:${webPort}`;

const build = spawnSync(process.execPath, [join(root, "mock-server/scripts/build.mjs")], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);

const env = {
  VITE_APP_SERVICES_BASE_URL: emulatorUrl,
  VITE_APP_SERVICES_APP_ID: "local-app",
  VITE_EMAILJS_ORIGIN: emulatorUrl,
  VITE_EMAILJS_PUBLIC_KEY: "local-public-key",
};
const { result, commands } = concurrently(
  [
    {
      name: "emulator",
      command: `node mock-server/dist/cli.js --port ${emulatorPort}`,
      cwd: root,
      prefixColor: "cyan",
    },
    {
      name: "web",
      command: `"${join(root, "node_modules/.bin/vite")}" --port ${webPort} --strictPort --host 127.0.0.1`,
      cwd: join(root, "web"),
      env,
      prefixColor: "magenta",
    },
  ],
  { killOthersOn: ["failure"], prefix: "name", restartTries: 0 },
);

process.stdout.write(
  `\nStarting the local stack:\n  web app     ${webUrl}\n  emulator    ${emulatorUrl}  (App Services and EmailJS)\n  inspector   ${emulatorUrl}/_mock/\n  control API ${emulatorUrl}/_mock/v1\n\n`,
);

let stopping = false;
function stop(signal) {
  if (stopping) return;
  stopping = true;
  for (const command of commands) if (!command.exited) command.kill(signal);
}
process.on("SIGINT", () => stop("SIGINT"));
process.on("SIGTERM", () => stop("SIGTERM"));
result.then(
  () => process.exit(0),
  (events) => process.exit(stopping ? 0 : (events.find((e) => e.exitCode !== 0)?.exitCode ?? 1)),
);
