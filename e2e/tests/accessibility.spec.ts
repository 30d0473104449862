/** axe on every page of the web app (and its dialogs and states): no serious or critical violations. */
import type { Page } from "@playwright/test";
import { type Emu, expect, expectAccessible, signIn, test } from "../fixtures/index.ts";

test("the check itself: a nameless button and an image without text fail it", async ({ page }) => {
  await page.setContent(
    '<!doctype html><html lang="en"><title>t</title><main><h1>t</h1><button></button><img src="data:,"></main></html>',
  );
  await expect(expectAccessible(page)).rejects.toThrow(/button-name \(critical\)[\s\S]*image-alt \(critical\)/);
});

// One test per page: each scan takes a second or two, and a slow machine must not add them up.
for (const [path, heading] of [
  ["/sign-in", "Sign in"],
  ["/sign-up", "Create an account"],
  ["/forgot-password", "Reset your password"],
  ["/contact", "Contact us"],
  ["/nowhere", "Page not found"],
  ["/confirm?token=x&tokenId=y", "This link did not work"],
  ["/reset-password?token=x&tokenId=y", "Choose a new password"],
] as const) {
  test(`a page without a session: ${path}`, async ({ page }) => {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1, name: heading })).toBeVisible();
    await expectAccessible(page);
  });
}

test("after signing up: check inbox, then the confirmed page", async ({ page, emu }) => {
  await page.goto("/sign-up");
  await page.getByLabel("E-mail address").fill("a11y@example.com");
  await page.getByLabel("Password", { exact: true }).fill("secret-1");
  await page.getByLabel("Repeat the password").fill("secret-1");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Check your inbox" })).toBeVisible();
  await expectAccessible(page);
  const mail = await emu.mail("a11y@example.com", { kind: "confirm" });
  await page.goto(mail.links[0]!);
  await expect(page.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
  await expectAccessible(page);
});

async function signInSeeded(page: Page, emu: Emu) {
  await emu.seedUser("a11y@example.com", "secret-1");
  await signIn(page, "a11y@example.com", "secret-1");
}

test("a signed-in user's notes: the list, editing, and the e-mail and delete dialogs", async ({ page, emu }) => {
  await signInSeeded(page, emu);
  await page.getByLabel("Title").fill("Checked");
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Checked" })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("button", { name: "Edit “Checked”" }).click();
  await expectAccessible(page);
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("button", { name: "E-mail “Checked”" }).click();
  await expect(page.getByRole("dialog")).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("button", { name: "Delete “Checked”" }).click();
  await expectAccessible(page);
});

test("a signed-in user's account page and its delete dialog", async ({ page, emu }) => {
  await signInSeeded(page, emu);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your account" })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("button", { name: "Delete account…" }).click();
  await expectAccessible(page);
});

test("a signed-in user's API keys, with a new key's secret shown", async ({ page, emu }) => {
  await signInSeeded(page, emu);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Key name").fill("a11y");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("Secret of the key a11y")).toBeVisible();
  await expectAccessible(page);
});

test("pages of a guest: notes, the account page's upgrade form and its sign-out dialog", async ({ page }) => {
  await page.goto("/sign-in");
  await page.getByRole("button", { name: "Continue without an account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await expect(page.getByRole("heading", { level: 2, name: /Keep your notes/ })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("button", { name: "Sign out…" }).click();
  await expect(page.getByRole("dialog", { name: "Sign out of the guest account?" })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
  await expect(page.getByText(/Guest accounts cannot have API keys/)).toBeVisible();
  await expectAccessible(page);
});
