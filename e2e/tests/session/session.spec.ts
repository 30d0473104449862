/** Sessions: transparent refresh when the access token expires, revocation, sign-out, deletion. */

import type { Page } from "@playwright/test";
import { expect, signIn, test } from "../../fixtures/index.ts";

async function signInSettled(page: Page, email: string, password: string) {
  await signIn(page, email, password);
  // Settled: the notes, their figures and the change stream have all answered, so no request that
  // started with the first access token is still on its way when a test moves the clock or revokes.
  await expect(page.getByText("You have no notes yet.")).toBeVisible();
  await expect(page.getByRole("definition").filter({ hasText: "None yet" })).toBeVisible();
  await expect(page.getByText("Live updates are on")).toBeVisible();
}

test("an access token that expires mid-session is refreshed transparently", async ({ page, emu }) => {
  await emu.seedUser("ada@example.com", "secret-1");
  await signInSettled(page, "ada@example.com", "secret-1");
  const refreshesBefore = (await emu.requests("refreshAccessToken")).length;
  await emu.advanceClock(31 * 60);
  await page.getByLabel("Title").fill("After the expiry");
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "After the expiry" })).toBeVisible();
  const calls = await emu.requests();
  expect(calls.some((r) => r.operationId === "callFunction" && r.status === 401)).toBe(true);
  expect((await emu.requests("refreshAccessToken")).length).toBeGreaterThan(refreshesBefore);
});

test("a revoked session signs the user out at once: its change stream ends and the refresh is refused", async ({
  page,
  emu,
}) => {
  const user = await emu.seedUser("bob@example.com", "secret-1");
  await signInSettled(page, "bob@example.com", "secret-1");
  await emu.revokeSessions(user.id);
  await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
  await expect(page.getByText("Your session has ended. Please sign in again.")).toBeVisible();
  const refreshes = await emu.requests("refreshAccessToken");
  expect(refreshes.map((r) => r.status)).toContain(401);
});

test("signs out: the refresh token is revoked", async ({ page, emu }) => {
  await emu.seedUser("cy@example.com", "secret-1");
  await signInSettled(page, "cy@example.com", "secret-1");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await page.getByRole("region", { name: "Sign out" }).getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
  await expect(page.getByText("You have signed out.")).toBeVisible();
  expect((await emu.requests("logOut")).map((r) => r.status)).toEqual([204]);
  const [user] = await emu.users();
  expect(user?.sessions).toEqual([]);
});

test("deletes the account behind a confirmation dialog", async ({ page, emu }) => {
  await emu.seedUser("del@example.com", "secret-1");
  await signInSettled(page, "del@example.com", "secret-1");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await page.getByRole("button", { name: "Delete account…" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete your account?" });
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(dialog).toBeHidden();
  expect(await emu.users()).toHaveLength(1);
  await page.getByRole("button", { name: "Delete account…" }).click();
  await dialog.getByRole("button", { name: "Delete permanently" }).click();
  await expect(page.getByText("Your account has been deleted.")).toBeVisible();
  expect(await emu.users()).toEqual([]);
});

test("a guest's sign-out, which loses the notes for good, asks first", async ({ page, emu }) => {
  await page.goto("/sign-in");
  await page.getByRole("button", { name: "Continue without an account" }).click();
  // The navigation settles once the notes page shows (a click during the sign-in can land elsewhere).
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  const section = page.getByRole("region", { name: "Sign out" });
  await section.getByRole("button", { name: "Sign out…" }).click();
  const dialog = page.getByRole("dialog", { name: "Sign out of the guest account?" });
  await dialog.getByRole("button", { name: "Cancel" }).click();
  await expect(dialog).toBeHidden();
  expect(await emu.requests("logOut")).toEqual([]);
  await section.getByRole("button", { name: "Sign out…" }).click();
  await dialog.getByRole("button", { name: "Sign out and lose the notes" }).click();
  await expect(page.getByText("You have signed out.")).toBeVisible();
  expect((await emu.requests("logOut")).map((r) => r.status)).toEqual([204]);
});
