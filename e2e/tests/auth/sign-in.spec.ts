/** Signing in with a password, anonymously, and the upgrade of a guest by linking. */
import { expect, test } from "../../fixtures/index.ts";

test("signs in with e-mail and password; a wrong password says so in plain words", { tag: "@smoke" }, async ({
  page,
  emu,
}) => {
  await emu.seedUser("ada@example.com", "correct horse");
  await page.goto("/sign-in");
  await page.getByLabel("E-mail address").fill("ada@example.com");
  await page.getByLabel("Password").fill("wrong horse");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("alert")).toHaveText(
    "The e-mail address or password is wrong. If you just signed up, confirm your address first.",
  );
  await page.getByLabel("Password").fill("correct horse");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await expect(page.getByText("Signed in as ada@example.com")).toBeVisible();
});

test("an address not confirmed yet gets a new confirmation e-mail from the sign-in page", async ({ page, emu }) => {
  await emu.seedUser("late@example.com", "secret-1", false);
  await page.goto("/sign-in");
  await page.getByLabel("E-mail address").fill("late@example.com");
  await page.getByLabel("Password").fill("secret-1");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("alert")).toContainText("If you just signed up, confirm your address first.");
  await expect(page.getByRole("button", { name: "Retry confirmation" })).toHaveCount(0);
  await page.getByRole("button", { name: "Resend confirmation e-mail" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "We sent a new confirmation link to late@example.com" }),
  ).toBeVisible();
  const mail = await emu.mail("late@example.com", { kind: "confirm" });
  await page.goto(mail.links[0]!);
  await expect(page.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
});

test("continues without an account, then keeps the notes by adding an e-mail and password (linking)", async ({
  page,
  emu,
}) => {
  await page.goto("/sign-in");
  await page.getByRole("button", { name: "Continue without an account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await page.getByLabel("Title").fill("Guest note");
  await page.getByRole("button", { name: "Add note" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Guest note" })).toBeVisible();
  const [guest] = await emu.users();
  expect(guest?.identities.map((i) => i.provider_type)).toEqual(["anon-user"]);

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  const upgrade = page.getByRole("region", { name: /Keep your notes/ });
  await upgrade.getByLabel("E-mail address").fill("guest@example.com");
  await upgrade.getByLabel("Password", { exact: true }).fill("secret-1");
  await upgrade.getByLabel("Repeat the password").fill("secret-1");
  await upgrade.getByRole("button", { name: "Add e-mail and password" }).click();
  await expect(page.getByRole("heading", { level: 3, name: "Confirm your e-mail address" })).toBeVisible();
  const mail = await emu.mail("guest@example.com", { kind: "confirm" });
  const linkTab = await page.context().newPage();
  await linkTab.goto(mail.links[0]!);
  await expect(linkTab.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
  // The account tab links the confirmed address by itself.
  await expect(
    page.getByRole("status").filter({ hasText: "Done! Your account now signs in with guest@example.com" }),
  ).toBeVisible();

  const users = await emu.users();
  const linked = users.find((u) => u.id === guest?.id);
  expect(linked?.identities.map((i) => i.provider_type)).toEqual(["anon-user", "local-userpass"]);
  expect((await emu.requests("login")).some((r) => r.path.includes("link=true") && r.status === 200)).toBe(true);
});
