/** Forgotten passwords: by e-mail link, and through the app's reset function. */
import { expect, test } from "../../fixtures/index.ts";

test("resets a forgotten password through the e-mailed link, which works once", async ({ page, emu }) => {
  await emu.seedUser("ada@example.com", "old-secret");
  await page.goto("/sign-in");
  await page.getByRole("link", { name: "Forgot your password?" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Reset your password" })).toBeVisible();
  // The app resets by e-mail: no security answer, which could never work.
  await expect(page.getByLabel("Security answer")).toHaveCount(0);
  await page.getByLabel("E-mail address").fill("ada@example.com");
  await page.getByRole("button", { name: "Send reset link" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "We sent a password reset link to ada@example.com" }),
  ).toBeVisible();
  const mail = await emu.mail("ada@example.com", { kind: "reset" });

  await page.goto(mail.links[0]!);
  await expect(page.getByRole("heading", { level: 1, name: "Choose a new password" })).toBeVisible();
  // The link's token, still good, is taken out of the address (and the tab's history) at once.
  await expect(page).toHaveURL((url) => url.pathname === "/reset-password" && url.search === "");
  await page.getByLabel("New password", { exact: true }).fill("new-secret");
  await page.getByLabel("Repeat the new password").fill("new-secret");
  await page.getByRole("button", { name: "Save new password" }).click();
  await page.getByRole("link", { name: "Sign in with your new password" }).click();
  await page.getByLabel("E-mail address").fill("ada@example.com");
  await page.getByLabel("Password").fill("new-secret");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();

  // The link again: used.
  const again = await page.context().newPage();
  await again.goto(mail.links[0]!);
  await again.getByLabel("New password", { exact: true }).fill("other-secret");
  await again.getByLabel("Repeat the new password").fill("other-secret");
  await again.getByRole("button", { name: "Save new password" }).click();
  await expect(again.getByRole("alert")).toContainText(
    "This password reset link has expired or has already been used.",
  );
});

test.describe("when the app resets passwords with a function", () => {
  test.use({
    appConfig: { providers: { "local-userpass": { runResetFunction: true, resetFunctionName: "resetPassword" } } },
  });

  test("asks for the security answer at once, refuses a wrong one and resets with the right one", async ({
    page,
    emu,
  }) => {
    await emu.seedUser("fn@example.com", "old-secret");
    await page.goto("/forgot-password");
    await expect(page.getByRole("button", { name: "Send reset link" })).toHaveCount(0);
    await page.getByLabel("E-mail address").fill("fn@example.com");
    await page.getByLabel("New password").fill("new-secret");
    await page.getByLabel("Security answer").fill("red");
    await page.getByRole("button", { name: "Reset password" }).click();
    await expect(page.getByText("Your password could not be reset. Check your answer and try again.")).toBeVisible();
    await page.getByLabel("Security answer").fill("blue");
    await page.getByRole("button", { name: "Reset password" }).click();
    await expect(page.getByText("Your password has been changed and you are signed in.")).toBeVisible();
    expect((await emu.requests("callResetPasswordFunction")).map((r) => r.status)).toEqual([400, 200]);
  });

  test.describe("while the web app's configuration still says e-mail", () => {
    test.use({ webConfig: { VITE_AUTH_RESET: "email" } });

    test("switches to the security answer when the service says so", async ({ page, emu }) => {
      await emu.seedUser("fn@example.com", "old-secret");
      await page.goto("/forgot-password");
      await expect(page.getByLabel("Security answer")).toHaveCount(0);
      await page.getByLabel("E-mail address").fill("fn@example.com");
      await page.getByRole("button", { name: "Send reset link" }).click();
      await expect(page.getByText("Passwords are reset with a security answer here, not by e-mail.")).toBeVisible();
      await expect(page.getByLabel("Security answer")).toBeVisible();
    });
  });
});

test.describe("when the app confirms accounts with a function", () => {
  test.use({
    appConfig: {
      providers: { "local-userpass": { runConfirmationFunction: true, confirmationFunctionName: "confirmUser" } },
    },
  });

  test("shows the pending state, and retry reports it is still waiting", async ({ page, emu }) => {
    await page.goto("/sign-up");
    await page.getByLabel("E-mail address").fill("wait+pending@example.com");
    await page.getByLabel("Password", { exact: true }).fill("secret-1");
    await page.getByLabel("Repeat the password").fill("secret-1");
    await page.getByRole("button", { name: "Create account" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Your account is waiting for approval" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Resend confirmation e-mail" })).toHaveCount(0);
    await page.getByRole("button", { name: "Retry confirmation" }).click();
    await expect(page.getByText("Your account is still waiting for approval. Try again later.")).toBeVisible();
    expect((await emu.requests("retryCustomConfirmation")).map((r) => r.status)).toEqual([200]);
    expect(await emu.mailCount({ to: "wait+pending@example.com" })).toBe(0);
  });
});
