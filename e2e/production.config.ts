import { defineConfig } from "@playwright/test";
import { chromiumLaunchOptions } from "./chromium.ts";

/**
 * The production rehearsal's journeys (`npm run rehearse`, scripts/rehearse.mjs): the web app as
 * users get it — built for the site, behind nginx with TLS and HTTP/2, two server instances on
 * PostgreSQL, mail over SMTP — in Chromium at the site's https origin. The rehearsal starts the
 * deployment and gives its addresses in REHEARSAL_* variables; the journeys break it on purpose
 * (an instance killed, the database restarted), so they run one at a time, in file order.
 */
const site = process.env.REHEARSAL_SITE;
if (!site) throw new Error("The @production journeys run against a rehearsal: use `npm run rehearse`.");

export default defineConfig({
  testDir: "./production",
  grep: /@production/,
  fullyParallel: false,
  workers: 1,
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
    trace: { mode: "retain-on-failure", screenshots: false },
    screenshot: "only-on-failure",
    launchOptions: await chromiumLaunchOptions(),
  },
});
