#!/usr/bin/env node
// `npm run mock -- [options]`: builds the emulator when a source changed since the last build
// (mock-server/scripts/build.mjs; nothing to do otherwise), then runs it in this process, passing
// every option through (`npm run mock -- --help`, `npm run mock -- exec -- cmd`): the bundle reads
// the options from process.argv, which has the same shape here. (In this process rather than a
// child: one Node start less before the first answer.)
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { buildBundle } from "../mock-server/scripts/build.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
try {
  await buildBundle();
} catch (error) {
  // esbuild has printed what failed to compile.
  process.stderr.write(`npm run mock: building the emulator failed (${error.message.split("\n")[0]})\n`);
  process.exit(1);
}
await import(pathToFileURL(join(root, "mock-server/dist/cli.js")).href);
