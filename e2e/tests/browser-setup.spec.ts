/** The browser as the config sets it up (playwright.config.ts): no hidden UI pages per window. */
import { expect, test } from "@playwright/test";

test("windows open without Chromium's omnibox popup pages", async ({ browser, page }) => {
  await page.goto("about:blank");
  const cdp = await browser.newBrowserCDPSession();
  const { targetInfos } = await cdp.send("Target.getTargets", { filter: [{}] });
  expect(targetInfos.map((t) => t.url).filter((url) => url.includes(".top-chrome"))).toEqual([]);
  expect(targetInfos.some((t) => t.type === "page")).toBe(true);
});
