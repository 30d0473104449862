import { defineConfig } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.ts";
import { emulatorPort, emulatorUrl, suiteWebConfig, webPort, webUrl } from "./e2e-env.ts";

/**
 * The hermetic suite: the emulator and the web app built from the sources as they are now and
 * served on loopback, Debian's Chromium, every test in its own app and EmailJS account (see
 * fixtures/), so tests run in parallel in any order. Run it with `npm run e2e [-- args]`.
 */

// A shard (`--shard=i/n`, one per CI machine) writes a blob report for `playwright merge-reports`.
const sharded = process.argv.some((arg) => arg === "--shard" || arg.startsWith("--shard="));
// The web app is built for the suite into a folder of its own (per port, so two local runs on
// other ports do not overwrite each other's), never served from web/dist: whatever was built
// there before, and with whatever settings, plays no part.
const webOut = `../e2e/.cache/web-${webPort}`;
const vite = "../node_modules/.bin/vite";
// Or a build of the current sources made just before (`npm test` builds web/dist in its first
// phase, for another deployment: the pages get the suite's settings at run time anyway, fixtures/),
// served as it is.
const prebuilt = process.env.E2E_WEB_DIST;
const buildWeb = `${vite} build --outDir ${webOut} --emptyOutDir --logLevel warn && `;

export default defineConfig({
  testDir: "./tests",
  fullyParallel: true,
  workers: 2,
  forbidOnly: !!process.env.CI,
  // A failing test runs once more, recording its trace (below); passing on that retry still fails
  // the run (a flaky test is a failure here).
  retries: 1,
  failOnFlakyTests: true,
  timeout: 20_000,
  expect: { timeout: 5_000 },
  reporter: sharded
    ? [["list"], ["blob", { outputDir: "blob-report" }]]
    : [["list"], ["html", { open: "never", outputFolder: "playwright-report" }]],
  outputDir: "test-results",
  use: {
    // Pages ask for reduced motion, so the web app's spinners stand still: a spinning one made
    // Chromium draw 60 frames a second for as long as it showed (23 tests: 82.6-86.2 s of CPU
    // against 88.0-91.8 s, two interleaved runs each). Nothing the tests look at moves.
    reducedMotion: "reduce",
    baseURL: webUrl,
    // A failed test keeps a screenshot, and its retry a trace (actions, DOM snapshots, network,
    // console). Traces are recorded on the retry only: recording one for every test, to keep those
    // of the failures, cost a tenth of the suite's CPU (23 tests: 91-100 s against 84-86 s, two runs
    // each). The trace's screencast is off: it made Chromium encode frames for every page of every
    // test, which cost a fifth of the suite's time (36-37 s against 43-46 s).
    trace: { mode: "on-first-retry", screenshots: false },
    screenshot: "only-on-failure",
    launchOptions: await chromiumLaunchOptions(),
  },
  webServer: [
    {
      // Bundled first (well under a second), so the suite never runs an older emulator.
      command: `node ../mock-server/scripts/build.mjs && exec node ../mock-server/dist/cli.js --port ${emulatorPort} --log-level warn --no-watch`,
      url: `${emulatorUrl}/_mock/v1/health`,
      reuseExistingServer: false,
      timeout: 60_000,
      stdout: "ignore",
      stderr: "pipe",
    },
    ...(process.env.E2E_ONLY_EMULATOR
      ? []
      : [
          {
            command: `${prebuilt ? "" : buildWeb}exec ${vite} preview --outDir ${prebuilt ?? webOut} --port ${webPort} --strictPort --host 127.0.0.1`,
            cwd: "../web",
            env: suiteWebConfig,
            url: webUrl,
            reuseExistingServer: false,
            timeout: 60_000,
            stdout: "ignore" as const,
            stderr: "pipe" as const,
          },
        ]),
  ],
});
