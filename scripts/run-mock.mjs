#!/usr/bin/env node
// `npm run mock -- [options]`: builds the emulator (well under a second) and runs it in the
// foreground, passing every option through (`npm run mock -- --help`, `npm run mock -- exec -- cmd`).
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const build = spawnSync(process.execPath, [join(root, "mock-server/scripts/build.mjs")], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);
const child = spawn(process.execPath, [join(root, "mock-server/dist/cli.js"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1)));
