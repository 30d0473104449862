import { defineConfig } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.ts";
import { emulatorPort, emulatorUrl, webPort, webUrl } from "./e2e-env.ts";

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
    launchOptions: await chromiumLaunchOptions(),
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
