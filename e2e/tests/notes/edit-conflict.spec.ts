/**
 * An edit whose note is saved or deleted in another window meanwhile: the editor says so and keeps
 * the text (save it as a new note, or reload the note); nothing is saved over the other change.
 */
import type { Browser, Page } from "@playwright/test";
import { expect, signIn, test } from "../../fixtures/index.ts";

/**
 * A second window in another browser context, signed in as the same user: it gets the first
 * window's run-time configuration and stored session, so it starts on the notes page at once.
 */
async function secondWindow(browser: Browser, page: Page) {
  const context = await browser.newContext({ baseURL: new URL(page.url()).origin });
  const { config, storage } = await page.evaluate(() => ({
    config: (window as unknown as { __APP_CONFIG__: unknown }).__APP_CONFIG__,
    storage: Object.entries(localStorage),
  }));
  await context.addInitScript(
    ({ config, storage }) => {
      (window as unknown as { __APP_CONFIG__: unknown }).__APP_CONFIG__ = config;
      if (localStorage.length === 0) for (const [key, value] of storage) localStorage.setItem(key, value);
    },
    { config, storage },
  );
  const other = await context.newPage();
  await other.goto("/notes");
  return other;
}

const editorOf = (page: Page) => page.getByRole("article").filter({ has: page.getByLabel("Text") });

test("without live updates, a stale save is refused: the draft is kept, reloaded, then saved as a new note", async ({
  page,
  emu,
  browser,
}) => {
  const user = await emu.seedUser("editor@example.com", "secret-1");
  await emu.seedNotes(user.id, [{ title: "Plan", body: "first" }]);
  // No change stream: this window learns of the other's changes only from its refused saves.
  await emu.addFault({ operationId: "callFunctionStreaming", status: 503, times: 100 });
  await signIn(page, "editor@example.com", "secret-1");
  const other = await secondWindow(browser, page);

  await page.getByRole("button", { name: "Edit “Plan”" }).click();
  const editor = editorOf(page);
  await editor.getByLabel("Text").fill("my draft");
  await other.getByRole("button", { name: "Edit “Plan”" }).click();
  await editorOf(other).getByLabel("Text").fill("their change");
  await other.getByRole("button", { name: "Save changes" }).click();
  await expect(other.getByText("their change")).toBeVisible();

  await editor.getByRole("button", { name: "Save changes" }).click();
  await expect(editor.getByRole("alert")).toContainText("“Plan” was changed in another window");
  await expect(editor.getByLabel("Text")).toHaveValue("my draft");
  await expect(editor.getByRole("button", { name: "Save changes" })).toHaveCount(0);
  await editor.getByRole("button", { name: "Reload the note" }).click();
  await expect(editor.getByLabel("Text")).toHaveValue("their change");
  await editor.getByLabel("Text").fill("my second draft");

  await other.getByRole("button", { name: "Delete “Plan”" }).click();
  await other.getByRole("dialog").getByRole("button", { name: "Delete note" }).click();
  await expect(other.getByText("You have no notes yet.")).toBeVisible();
  await editor.getByRole("button", { name: "Save changes" }).click();
  await expect(editor.getByRole("alert")).toContainText("“Plan” was deleted in another window");
  await editor.getByRole("button", { name: "Save as a new note" }).click();
  await expect(page.getByText("Your text has been saved as a new note “Plan”.")).toBeVisible();
  await other.reload();
  await expect(other.getByText("my second draft")).toBeVisible();
  await other.context().close();
});

test("with live updates, a change made elsewhere shows in the editor at once; the draft can be discarded", async ({
  page,
  emu,
  browser,
}) => {
  const user = await emu.seedUser("editor@example.com", "secret-1");
  await emu.seedNotes(user.id, [{ title: "Plan", body: "first" }]);
  await signIn(page, "editor@example.com", "secret-1");
  await expect(page.getByText("Live updates are on")).toBeVisible();
  const other = await secondWindow(browser, page);
  await page.getByRole("button", { name: "Edit “Plan”" }).click();
  await editorOf(page).getByLabel("Text").fill("my draft");

  await other.getByRole("button", { name: "Edit “Plan”" }).click();
  await editorOf(other).getByLabel("Text").fill("their change");
  await other.getByRole("button", { name: "Save changes" }).click();

  const editor = editorOf(page);
  await expect(editor.getByRole("alert")).toContainText("“Plan” was changed in another window");
  await expect(editor.getByLabel("Text")).toHaveValue("my draft");
  await editor.getByRole("button", { name: "Discard my text" }).click();
  await expect(page.getByText("their change")).toBeVisible();
  await other.context().close();
});
