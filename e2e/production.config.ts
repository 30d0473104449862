import { defineConfig } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.ts";

/**
 * The production rehearsal's journeys (`npm run rehearse`, scripts/rehearse.mjs): the web app as
 * users get it — built for the site, behind nginx with TLS and HTTP/2, two server instances on
 * PostgreSQL, mail over SMTP — in Chromium at the site's https origin. The rehearsal starts the
 * deployment and gives its addresses in REHEARSAL_* variables. More journeys: files in production/,
 * tests tagged @production.
 */
const site = process.env.REHEARSAL_SITE;
if (!site) throw new Error("The @production journeys run against a rehearsal: use `npm run rehearse`.");

export default defineConfig({
  testDir: "./production",
  globalSetup: "./production/wait-for-deployment.ts",
  grep: /@production/,
  // Journeys run side by side (each with accounts of its own); the faults' and operations' journeys
  // (*-faults.spec.ts, *-operations.spec.ts) stop or restart parts of the deployment for everyone, so
  // they run alone, after them, one at a time.
  projects: [
    { name: "journeys", testIgnore: /-(faults|operations)\.spec\.ts$/, fullyParallel: true },
    { name: "faults", testMatch: /-(faults|operations)\.spec\.ts$/, dependencies: ["journeys"], workers: 1 },
  ],
  workers: 2,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: [["list"]],
  outputDir: "rehearsal-results/test-results",
  use: {
    baseURL: site,
    // The certificate is made for the run; nothing else about TLS is skipped.
    ignoreHTTPSErrors: true,
    // Traces cost every journey a tenth of its CPU: a failure keeps a screenshot, and the rehearsal
    // prints every process's last log lines; `npm run rehearse -- --trace on` records traces.
    trace: "off",
    screenshot: "only-on-failure",
    launchOptions: await chromiumLaunchOptions(),
  },
});
