import { createRequire } from "node:module";
import { defineConfig } from "@playwright/test";
// @ts-expect-error: a plain ESM script without types
import { findBrowser } from "../scripts/ensure-browser.mjs";
import { emulatorPort, emulatorUrl, webPort, webUrl } from "./e2e-env.ts";

const executablePath: string | null = findBrowser();
if (!executablePath) throw new Error("No Chromium found: run `node scripts/ensure-browser.mjs` (npm test does).");

/**
 * Chromium features off in the tests. Besides what Playwright turns off (its list, repeated: Chromium
 * honours only the last --disable-features switch, so ours replaces Playwright's), the omnibox
 * popups: Chromium's own WebUI pages, one renderer each, made for every window a test opens and never
 * shown headless — a fifth of the suite's CPU on two cores (about 52 s → 40 s for the whole suite).
 */
const playwrightDisabledFeatures = [
  "AvoidUnnecessaryBeforeUnloadCheckSync",
  "DestroyProfileOnBrowserClose",
  "HttpsUpgrades",
  "HttpsFirstBalancedModeAutoEnable",
  "LensOverlay",
  "MediaRouter",
  "PaintHolding",
  "ThirdPartyStoragePartitioning",
  "AvoidCorsURLLoaderRestartOnRedirect",
  "TcpPortRandomizationWin",
  "OptimizationHints",
  "NetworkTimeServiceQuerying",
  "AimEnabled",
  "PreconnectToSearch",
  "msForceBrowserSignIn",
  "msEdgeUpdateLaunchServicesPreferredVersion",
];
const playwrightVersion: string = createRequire(import.meta.url)("playwright-core/package.json").version;
if (!playwrightVersion.startsWith("1.65.")) {
  throw new Error(
    `Playwright ${playwrightVersion}: compare its --disable-features list (chromiumSwitches in playwright-core) with playwrightDisabledFeatures in e2e/playwright.config.ts, then update the version checked here.`,
  );
}
const disabledFeatures = [...playwrightDisabledFeatures, "WebUIOmniboxPopup", "WebUIOmniboxAimPopup"];

/**
 * The hermetic suite: the built emulator and the built web app on loopback, Debian's Chromium,
 * every test in its own app and EmailJS account (see fixtures/), so tests run in parallel in any order.
 */
export default defineConfig({
  testDir: "./tests",
  fullyParallel: true,
  workers: 2,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 20_000,
  expect: { timeout: 5_000 },
  reporter: [["list"], ["html", { open: "never", outputFolder: "playwright-report" }]],
  outputDir: "test-results",
  use: {
    baseURL: webUrl,
    trace: "retain-on-failure",
    screenshot: "only-on-failure",
    launchOptions: {
      executablePath,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--disable-quic",
        `--disable-features=${disabledFeatures.join(",")}`,
      ],
    },
  },
  webServer: [
    {
      command: `node ../mock-server/dist/cli.js --port ${emulatorPort} --log-level warn --no-watch`,
      url: `${emulatorUrl}/_mock/v1/health`,
      reuseExistingServer: false,
      timeout: 15_000,
      stdout: "ignore",
      stderr: "pipe",
    },
    ...(process.env.E2E_ONLY_EMULATOR
      ? []
      : [
          {
            command: `npm run preview -w web -- --port ${webPort} --strictPort --host 127.0.0.1`,
            cwd: "..",
            url: webUrl,
            reuseExistingServer: false,
            timeout: 15_000,
            stdout: "ignore" as const,
            stderr: "pipe" as const,
          },
        ]),
  ],
});
