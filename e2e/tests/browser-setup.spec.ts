/**
 * The browser as the config launches it (chromium.ts): Playwright's disabled features and the
 * suite's in one switch (Chromium reads only the last one), so no hidden omnibox pages per window.
 */
import { expect, test } from "@playwright/test";
import { playwrightDisabledFeatures, suiteDisabledFeatures } from "../chromium.ts";

test("windows open without Chromium's omnibox popup pages", async ({ browser, page }) => {
  await page.goto("about:blank");
  const cdp = await browser.newBrowserCDPSession();
  const { targetInfos } = await cdp.send("Target.getTargets", { filter: [{}] });
  expect(targetInfos.map((t) => t.url).filter((url) => url.includes(".top-chrome"))).toEqual([]);
  expect(targetInfos.some((t) => t.type === "page")).toBe(true);
});

test("Chromium gets one --disable-features switch: Playwright's features and the suite's", async ({ page }) => {
  await page.goto("chrome://version");
  const commandLine = (await page.locator("#command_line").textContent()) ?? "";
  const switches = commandLine.match(/--disable-features=\S+/g) ?? [];
  expect(switches).toHaveLength(1);
  expect(switches[0]!.slice("--disable-features=".length).split(",")).toEqual(
    expect.arrayContaining([...playwrightDisabledFeatures(), ...suiteDisabledFeatures]),
  );
});
