/** Long words and URLs wrap inside their cards: the page never scrolls sideways. */
import type { Page } from "@playwright/test";
import { expect, signIn, test } from "../../fixtures/index.ts";

const url = `https://example.com/${"a-very-long-path-segment-without-any-space/".repeat(12)}?query=${"x".repeat(120)}`;

const pageWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

test("a note whose title and text are one long URL stays within the window, at 1,280 and 390 px", async ({
  page,
  emu,
}) => {
  const user = await emu.seedUser("wide@example.com", "secret-1");
  await emu.seedNotes(user.id, [{ title: url, body: url }]);
  await page.setViewportSize({ width: 1280, height: 800 });
  await signIn(page, "wide@example.com", "secret-1");
  await expect(page.getByRole("heading", { level: 3, name: url })).toBeVisible();
  expect(await pageWidth(page)).toBeLessThanOrEqual(1280);

  await page.getByRole("button", { name: `Edit “${url}”` }).click();
  await expect(page.getByRole("heading", { level: 3, name: `Edit “${url}”` })).toBeVisible();
  await page.setViewportSize({ width: 390, height: 800 });
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);
  await page.getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("heading", { level: 3, name: url })).toBeVisible();
  expect(await pageWidth(page)).toBeLessThanOrEqual(390);
});
