#!/usr/bin/env node
// `npm run mock -- [options]`: builds the emulator when a source changed since the last build
// (mock-server/scripts/build.mjs; nothing to do otherwise) and runs it in the foreground, passing
// every option through (`npm run mock -- --help`, `npm run mock -- exec -- cmd`).
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildBundle } from "../mock-server/scripts/build.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
try {
  await buildBundle();
} catch (error) {
  // esbuild has printed what failed to compile.
  process.stderr.write(`npm run mock: building the emulator failed (${error.message.split("\n")[0]})\n`);
  process.exit(1);
}
const child = spawn(process.execPath, [join(root, "mock-server/dist/cli.js"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal === "SIGINT" || signal === "SIGTERM" ? 0 : 1)));
