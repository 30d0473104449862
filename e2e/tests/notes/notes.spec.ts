/** Notes: create, edit, delete, figures, live changes across pages, and a failure then a retry. */
import type { Page } from "@playwright/test";
import { expect, signIn, test } from "../../fixtures/index.ts";

const signInAsWriter = (page: Page) => signIn(page, "notes@example.com", "secret-1");

async function addNote(page: Page, title: string, text: string) {
  await page.getByLabel("Title").fill(title);
  await page.getByLabel("Text").fill(text);
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("status").filter({ hasText: `The note “${title}” has been added.` })).toBeVisible();
}

test.beforeEach(async ({ emu }) => {
  await emu.seedUser("notes@example.com", "secret-1");
});

test("creates, edits and deletes notes, with figures from the noteStats function", async ({ page }) => {
  await signInAsWriter(page);
  await expect(page.getByText("You have no notes yet. Write your first one above.")).toBeVisible();
  await addNote(page, "Groceries", "milk eggs bread");
  await addNote(page, "Ideas", "one two");
  const overview = page.getByRole("region", { name: "Overview" });
  await expect(overview.getByText("Notes", { exact: true }).locator("..")).toContainText("2");
  await expect(overview.getByText("Words", { exact: true }).locator("..")).toContainText("5");

  await page.getByRole("button", { name: "Edit “Groceries”" }).click();
  const article = page.getByRole("article").filter({ has: page.getByLabel("Title") });
  await article.getByLabel("Title").fill("Shopping");
  await article.getByRole("button", { name: "Save changes" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Shopping" })).toBeVisible();

  await page.getByRole("button", { name: "Delete “Ideas”" }).click();
  await page.getByRole("dialog", { name: "Delete “Ideas”?" }).getByRole("button", { name: "Delete note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Ideas" })).toBeHidden();
  await expect(overview.getByText("Notes", { exact: true }).locator("..")).toContainText("1");
});

test("changes made on another page appear live", async ({ page, emu }) => {
  await signInAsWriter(page);
  await expect(page.getByText("Live updates are on: changes made elsewhere appear here.")).toBeVisible();
  const other = await page.context().newPage();
  await other.goto("/notes");
  await expect(other.getByText("Live updates are on: changes made elsewhere appear here.")).toBeVisible();
  await expect.poll(() => emu.watchers()).toBe(2);

  await addNote(other, "From the other page", "hello");
  await expect(page.getByRole("heading", { level: 3, name: "From the other page" })).toBeVisible();
  await expect(page.getByText("“From the other page” was added elsewhere.")).toBeVisible();

  await other.getByRole("button", { name: "Delete “From the other page”" }).click();
  await other.getByRole("dialog").getByRole("button", { name: "Delete note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "From the other page" })).toBeHidden();
});

test("a note added elsewhere while the list loads stays in it", async ({ page, emu }) => {
  await signInAsWriter(page);
  await addNote(page, "Written before", "in the list's load");
  // The next load of the list is read at once but answered only once another page has added a
  // note: its answer is older than that change, which reached this page through the stream.
  let read: () => void = () => {};
  const wasRead = new Promise<void>((resolve) => {
    read = resolve;
  });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route("**/functions/call", async (route) => {
    if (!route.request().postData()?.includes('"name":"find"')) return route.fallback();
    const response = await route.fetch();
    read();
    await released;
    await route.fulfill({ response });
  });
  await page.reload();
  await wasRead;
  await expect.poll(() => emu.watchers()).toBe(1);
  const other = await page.context().newPage();
  await other.goto("/notes");
  await addNote(other, "Written meanwhile", "while the list loaded");
  await expect(page.getByRole("heading", { level: 3, name: "Written meanwhile" })).toBeVisible();
  release();
  await expect(page.getByRole("heading", { level: 3, name: "Written before" })).toBeVisible();
  await expect(page.getByRole("heading", { level: 3, name: "Written meanwhile" })).toBeVisible();
});

test("a list loaded before its stream opened is loaded again when it opens", async ({ page, emu }) => {
  await signInAsWriter(page);
  await addNote(page, "Written before", "in the first load");
  // The page's next stream opens 4 s late: the list loads without it after a second.
  await emu.addFault({ operationId: "callFunctionStreaming", delayMs: 4000, times: 1 });
  await page.reload();
  await expect(page.getByRole("heading", { level: 3, name: "Written before" })).toBeVisible();
  await expect(page.getByText("Connecting live updates…")).toBeVisible();
  // A change after that load and before the stream starts reaches the page when it opens.
  const other = await page.context().newPage();
  await other.goto("/notes");
  await addNote(other, "Written meanwhile", "before the stream opened");
  await expect(page.getByText("Live updates are on: changes made elsewhere appear here.")).toBeVisible({
    timeout: 10_000,
  });
  await expect(page.getByRole("heading", { level: 3, name: "Written meanwhile" })).toBeVisible();
});

test("the notes collection dropped: the list empties, and live updates come back", async ({ page, emu }) => {
  await signInAsWriter(page);
  await addNote(page, "Soon gone", "dropped with its collection");
  await expect.poll(() => emu.watchers()).toBe(1);
  await emu.dropCollection("notes-app", "notes");
  // The stream's drop event reloads the list; its end (after invalidate) reopens the stream.
  await expect(page.getByRole("heading", { level: 3, name: "Soon gone" })).toBeHidden();
  await expect(page.getByText("You have no notes yet. Write your first one above.")).toBeVisible();
  const other = await page.context().newPage();
  await other.goto("/notes");
  await addNote(other, "After the drop", "written elsewhere");
  await expect(page.getByRole("heading", { level: 3, name: "After the drop" })).toBeVisible();
});

test("a server function failure (injected) shows an error, and a retry succeeds", async ({ page, emu }) => {
  await signInAsWriter(page);
  await emu.addFault({ operationId: "callFunction", status: 500, times: 1 });
  await page.getByLabel("Title").fill("Flaky");
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("alert")).toHaveText("Something went wrong on our side. Please try again in a moment.");
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Flaky" })).toBeVisible();
  const faulted = (await emu.requests("callFunction")).filter((r) => r.faulted);
  expect(faulted).toHaveLength(1);
});

test("loads that fail (injected faults on the list and the figures) offer Try again", async ({ page, emu }) => {
  await emu.addFault({ operationId: "callFunction", status: 500, times: 2 });
  await signInAsWriter(page);
  const overview = page.getByRole("region", { name: "Overview" });
  const list = page.getByRole("region", { name: "All notes" });
  await expect(overview.getByRole("alert")).toHaveText(
    "Something went wrong on our side. Please try again in a moment.",
  );
  await expect(list.getByRole("alert")).toHaveText("Something went wrong on our side. Please try again in a moment.");
  await overview.getByRole("button", { name: "Try again" }).click();
  await expect(overview.getByRole("definition").filter({ hasText: "None yet" })).toBeVisible();
  await list.getByRole("button", { name: "Try again" }).click();
  await expect(list.getByText("You have no notes yet. Write your first one above.")).toBeVisible();
  await expect(page.getByRole("alert")).toHaveCount(0);
});

test("shows a hundred notes, then older ones a page at a time", async ({ page, emu }) => {
  const user = (await emu.users()).find((u) => u.email === "notes@example.com")!;
  // 103 notes changed at the same moment (their order then goes by id), and two without a date of
  // change, which come last.
  await emu.seedNotes(
    user.id,
    Array.from({ length: 103 }, (_, i) => ({ title: `Note ${i}` })),
  );
  await emu.insertDocuments("notes-app", "notes", [
    { owner_id: user.id, title: "Undated one", body: "" },
    { owner_id: user.id, title: "Undated two", body: "" },
  ]);
  await signInAsWriter(page);
  const list = page.getByRole("region", { name: "All notes" });
  const titles = list.getByRole("heading", { level: 3 });
  await expect(titles).toHaveCount(100);
  await list.getByRole("button", { name: "Show older notes" }).click();
  await expect(titles).toHaveCount(105);
  await expect(list.getByRole("button", { name: "Show older notes" })).toBeHidden();
  const shown = await titles.allTextContents();
  expect(new Set(shown).size).toBe(105);
  expect(shown.slice(-2).sort()).toEqual(["Undated one", "Undated two"]);
});
