/** Sign-up, the confirmation e-mail and its link, resending it, and the link's failure cases. */
import { expect, test } from "../../fixtures/index.ts";

test("signs up, confirms through the link of the captured e-mail, and is signed in", async ({ page, emu }) => {
  await page.goto("/sign-up");
  await expect(page.getByRole("heading", { level: 1, name: "Create an account" })).toBeVisible();
  await page.getByLabel("E-mail address").fill("ada@example.com");
  await page.getByLabel("Password", { exact: true }).fill("correct horse");
  await page.getByLabel("Repeat the password").fill("correct horse");
  await page.getByRole("button", { name: "Create account" }).click();

  await expect(page.getByRole("heading", { level: 1, name: "Check your inbox" })).toBeVisible();
  // The app confirms by e-mail: nothing about approvals, which could never happen.
  await expect(page.getByRole("button", { name: "Retry confirmation" })).toHaveCount(0);
  const first = await emu.mail("ada@example.com", { kind: "confirm" });

  await page.getByRole("button", { name: "Resend confirmation e-mail" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "We sent a new confirmation link to ada@example.com" }),
  ).toBeVisible();
  const second = await emu.mail("ada@example.com", { kind: "confirm", since: first.id });
  expect(second.token).not.toBe(first.token);

  // The link opened in a new tab (as from a mail client): it confirms, and the sign-up tab, which
  // knows the password, signs in by itself.
  const linkTab = await page.context().newPage();
  await linkTab.goto(second.links[0]!);
  await expect(linkTab.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
  // The link's token is not kept in the tab's address (nor its history).
  expect(new URL(linkTab.url()).search).toBe("");
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await expect(page.getByText("Signed in as ada@example.com")).toBeVisible();
});

test("a used link and an expired link (the clock moved 31 minutes) say so, and a new link can be requested", async ({
  page,
  emu,
}) => {
  await page.goto("/sign-up");
  await page.getByLabel("E-mail address").fill("bob@example.com");
  await page.getByLabel("Password", { exact: true }).fill("secret-1");
  await page.getByLabel("Repeat the password").fill("secret-1");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Check your inbox" })).toBeVisible();
  const mail = await emu.mail("bob@example.com", { kind: "confirm" });

  await emu.advanceClock(31 * 60);
  await page.goto(mail.links[0]!);
  await expect(page.getByRole("heading", { level: 1, name: "This link did not work" })).toBeVisible();
  await expect(page.getByRole("alert")).toHaveText(
    "This confirmation link has expired or has already been used. You can ask for a new one.",
  );
  await page.getByRole("button", { name: "Send a new confirmation e-mail" }).click();
  const fresh = await emu.mail("bob@example.com", { kind: "confirm", since: mail.id });

  await page.goto(fresh.links[0]!);
  await expect(page.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
  // The same link again: used.
  const again = await page.context().newPage();
  await again.goto(fresh.links[0]!);
  await expect(again.getByRole("heading", { level: 1, name: "This link did not work" })).toBeVisible();
});

test("refuses an address that is already registered", async ({ page, emu }) => {
  await emu.seedUser("taken@example.com", "secret-1");
  await page.goto("/sign-up");
  await page.getByLabel("E-mail address").fill("Taken@example.com");
  await page.getByLabel("Password", { exact: true }).fill("secret-1");
  await page.getByLabel("Repeat the password").fill("secret-1");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByRole("alert")).toHaveText(
    "This e-mail address is already registered. Sign in, or reset your password if you forgot it.",
  );
});

test("checks the password rule before sending", async ({ page, emu }) => {
  await page.goto("/sign-up");
  await page.getByLabel("E-mail address").fill("short@example.com");
  await page.getByLabel("Password", { exact: true }).fill("12345");
  await page.getByLabel("Repeat the password").fill("12345");
  await page.getByRole("button", { name: "Create account" }).click();
  await expect(page.getByLabel("Password", { exact: true })).toHaveAttribute("aria-invalid", "true");
  expect(await emu.requests("registerUser")).toEqual([]);
});
