/** axe on every page of the web app (and its dialogs and states): no serious or critical violations. */
import { expect, expectAccessible, test } from "../fixtures/index.ts";

test("pages without a session: sign-in, sign-up, check inbox, confirm, forgot and reset password, contact, not found", async ({
  page,
  emu,
}) => {
  for (const [path, heading] of [
    ["/sign-in", "Sign in"],
    ["/sign-up", "Create an account"],
    ["/forgot-password", "Reset your password"],
    ["/contact", "Contact us"],
    ["/nowhere", "Page not found"],
    ["/confirm?token=x&tokenId=y", "This link did not work"],
    ["/reset-password?token=x&tokenId=y", "Choose a new password"],
  ] as const) {
    await page.goto(path);
    await expect(page.getByRole("heading", { level: 1, name: heading })).toBeVisible();
    await expectAccessible(page);
  }
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

test("pages of a signed-in user: notes (editing, dialogs), account, API keys", async ({ page, emu }) => {
  await emu.seedUser("a11y@example.com", "secret-1");
  await page.goto("/sign-in");
  await page.getByLabel("E-mail address").fill("a11y@example.com");
  await page.getByLabel("Password").fill("secret-1");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
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
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your account" })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("button", { name: "Delete account…" }).click();
  await expectAccessible(page);
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
  await page.getByLabel("Key name").fill("a11y");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("Secret of the key a11y")).toBeVisible();
  await expectAccessible(page);
});

test("pages of a guest: notes and the account page's upgrade form", async ({ page }) => {
  await page.goto("/sign-in");
  await page.getByRole("button", { name: "Continue without an account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await expect(page.getByRole("heading", { level: 2, name: /Keep your notes/ })).toBeVisible();
  await expectAccessible(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
  await expect(page.getByText(/Guest accounts cannot have API keys/)).toBeVisible();
  await expectAccessible(page);
});
