#!/usr/bin/env node
// Finds a Chromium for the end-to-end tests: $CHROMIUM_PATH, Debian's /usr/bin/chromium, or a
// browser Playwright already installed on this machine. When none exists and we are root on
// Debian, installs Debian's `chromium` package; otherwise stops with what to install.
// Never downloads Playwright's own browsers.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { aptInstall, isRootOnDebian } from "./system-packages.mjs";

const candidates = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
];

export function findBrowser() {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  for (const path of candidates) if (existsSync(path)) return path;
  try {
    const require = createRequire(import.meta.url);
    const { chromium } = require("playwright-core");
    const path = chromium.executablePath();
    if (path && existsSync(path)) return path;
  } catch {
    // playwright-core not installed or no browser of its own
  }
  return null;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let path = findBrowser();
  if (!path && isRootOnDebian()) {
    process.stdout.write("No Chromium found: installing Debian's chromium package (about a minute)…\n");
    aptInstall(["chromium"]);
    path = findBrowser();
  }
  if (!path) {
    process.stderr.write(
      "The end-to-end tests need Chromium and none was found.\n" +
        "  Debian/Ubuntu:  sudo apt-get install chromium\n" +
        "  or point CHROMIUM_PATH at an installed Chrome/Chromium binary.\n",
    );
    process.exit(1);
  }
  process.stdout.write(`Chromium: ${path}\n`);
}
