#!/usr/bin/env node
// `npm run e2e [-- playwright args]`: the end-to-end suite, or part of it (`-- tests/notes`,
// `--headed`, `--ui`, `--grep @smoke`, `--shard=1/3`). Makes sure a Chromium is there, then runs
// Playwright, whose config builds the emulator and the web app from the current sources and
// starts both on loopback: nothing built or configured earlier changes the result.
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const browser = spawnSync(process.execPath, [join(root, "scripts/ensure-browser.mjs")], { stdio: "inherit" });
if (browser.status !== 0) process.exit(browser.status ?? 1);

// Playwright as the e2e workspace resolves it (hoisted to the root or, after some upgrades, its own).
const playwright = join(
  dirname(createRequire(join(root, "e2e/package.json")).resolve("@playwright/test/package.json")),
  "cli.js",
);
const child = spawn(
  process.execPath,
  [playwright, "test", "--config", join(root, "e2e/playwright.config.ts"), ...process.argv.slice(2)],
  { cwd: root, stdio: "inherit" },
);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
