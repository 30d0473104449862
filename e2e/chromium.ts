/**
 * How the suite launches Chromium: the machine's own browser (scripts/ensure-browser.mjs), with
 * Chromium's omnibox popups turned off. Those are WebUI pages, one renderer each, that Chromium
 * makes for every window a test opens and never shows headless: on two cores they cost about a
 * third of the suite's time (31–34 s against 45–48 s, three runs each, 2026-11-24).
 *
 * Chromium honours only the last `--disable-features` switch, and Playwright passes one of its own,
 * so ours has to carry Playwright's features too. Rather than a copy of Playwright's list (which
 * changes between its releases), the list is read from the switch Playwright gives a Chromium it
 * launches — public API only: `launchServer()` and the process's arguments — and that switch alone
 * is replaced (`ignoreDefaultArgs`). Any Playwright version works as it is.
 */
import { chromium, type LaunchOptions } from "@playwright/test";
// @ts-expect-error: a plain ESM script without types
import { findBrowser } from "../scripts/ensure-browser.mjs";

/** Features the suite turns off besides Playwright's. */
export const suiteDisabledFeatures = ["WebUIOmniboxPopup", "WebUIOmniboxAimPopup"];

const args = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-quic",
];

/**
 * Playwright's own `--disable-features=…` switch ("" if it passes none). Read once per run: the
 * test runner loads the config first and its workers inherit the environment.
 */
async function playwrightFeatureSwitch(executablePath: string): Promise<string> {
  const cached = process.env.E2E_PLAYWRIGHT_FEATURE_SWITCH;
  if (cached !== undefined) return cached;
  const server = await chromium.launchServer({ executablePath, args });
  const found = server.process().spawnargs.find((arg) => arg.startsWith("--disable-features=")) ?? "";
  await server.close();
  process.env.E2E_PLAYWRIGHT_FEATURE_SWITCH = found;
  return found;
}

/** Playwright's disabled features, as it launches Chromium. */
export function playwrightDisabledFeatures(): string[] {
  const value = process.env.E2E_PLAYWRIGHT_FEATURE_SWITCH?.slice("--disable-features=".length) ?? "";
  return value.split(",").filter(Boolean);
}

export async function chromiumLaunchOptions(): Promise<LaunchOptions> {
  const executablePath: string | null = findBrowser();
  if (!executablePath) throw new Error("No Chromium found: run `node scripts/ensure-browser.mjs`.");
  const inherited = await playwrightFeatureSwitch(executablePath);
  const features = [...playwrightDisabledFeatures(), ...suiteDisabledFeatures];
  return {
    executablePath,
    ignoreDefaultArgs: inherited ? [inherited] : [],
    args: [...args, `--disable-features=${features.join(",")}`],
  };
}
