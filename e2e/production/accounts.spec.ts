/**
 * Accounts on the deployed site: sign-up with the mailed link, sign-in and reload, API keys, a
 * password reset by mail that ends the other sessions, guests, the contact form without EmailJS.
 */
import { sendContactForm } from "../fixtures/contact-form.ts";
import {
  clientApi,
  confirmedAccount,
  expect,
  giveLargestCustomData,
  liveOn,
  Mailbox,
  newAddress,
  signIn,
  signUp,
  test,
} from "./fixtures.ts";

test.describe("accounts", { tag: "@production" }, () => {
  test("signs up, confirms with the mailed link, signs in again and stays signed in across a reload", async ({
    page,
    mailbox,
  }) => {
    const email = newAddress("ada");
    await signUp(page, email, "correct horse");

    // The link from the mail the SMTP server received, opened in another tab as from a mail client:
    // it confirms, and the sign-up tab signs in by itself.
    const mail = await mailbox.latest(email, /^Confirm your Notes account$/);
    const linkTab = await page.context().newPage();
    await linkTab.goto(Mailbox.link(mail, "/confirm"));
    await expect(linkTab.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
    await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
    await linkTab.close();

    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    await page.getByRole("region", { name: "Sign out" }).getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByText("You have signed out.")).toBeVisible();
    await signIn(page, email, "correct horse");
    await page.reload();
    await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
    await expect(page.getByText(`Signed in as ${email}`)).toBeVisible();
  });

  test("an API key is shown once and signs in", async ({ page, browser, request, mailbox }) => {
    const { email, password } = await confirmedAccount(request, mailbox, "keys");
    await signIn(page, email, password);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Key name").fill("laptop");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await page.getByLabel("Secret of the key laptop").inputValue();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    await page.getByRole("button", { name: "I have copied the key" }).click();
    await expect(page.getByText(secret)).toHaveCount(0);

    const other = await browser.newContext();
    const keyPage = await other.newPage();
    await keyPage.goto("/sign-in");
    await keyPage.getByLabel("API key", { exact: true }).fill(secret);
    await keyPage.getByRole("button", { name: "Sign in with API key" }).click();
    await expect(keyPage.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
    await other.close();
  });

  test("a password reset by mail ends the sessions elsewhere", async ({ page, browser, request, mailbox }) => {
    const { email, password } = await confirmedAccount(request, mailbox, "reset");
    const elsewhere = await browser.newContext();
    const otherDevice = await elsewhere.newPage();
    await signIn(otherDevice, email, password);

    await page.goto("/forgot-password");
    await page.getByLabel("E-mail address").fill(email);
    const asked = Date.now();
    await page.getByRole("button", { name: "Send reset link" }).click();
    const mail = await mailbox.latest(email, /^Reset your Notes password$/, { after: asked - 1000 });
    await page.goto(Mailbox.link(mail, "/reset-password"));
    await page.getByLabel("New password", { exact: true }).fill("a-new-secret");
    await page.getByLabel("Repeat the new password").fill("a-new-secret");
    await page.getByRole("button", { name: "Save new password" }).click();
    await page.getByRole("link", { name: "Sign in with your new password" }).click();
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await expect(page.getByRole("alert")).toContainText("The e-mail address or password is wrong.");
    await signIn(page, email, "a-new-secret");

    // The other device's session ended with the reset, and its open page was told at once (its
    // change stream ended: the refresh that followed was refused).
    await expect(otherDevice.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
    await expect(otherDevice.getByText("Your session has ended. Please sign in again.")).toBeVisible();
    await elsewhere.close();
  });

  test("a user whose custom data is as large as a token carries signs in and goes live through the proxy", async ({
    page,
    request,
    mailbox,
  }) => {
    const { email, password } = await confirmedAccount(request, mailbox, "wide");
    const login = await request.post(`${clientApi}/auth/providers/local-userpass/login`, {
      data: { username: email, password },
    });
    const { access_token: accessToken, user_id: userId } = (await login.json()) as {
      access_token: string;
      user_id: string;
    };
    await giveLargestCustomData(request, { userId, accessToken }, "Ada Wide");

    // Its access token (~23 KB) goes through nginx in Authorization and in the change stream's URL.
    await signIn(page, email, password);
    await expect(page.getByText("Signed in as Ada Wide")).toBeVisible();
    await expect(page.getByText(liveOn)).toBeVisible();
    await expect(page.getByRole("region", { name: "Overview" }).getByRole("alert")).toHaveCount(0);
    await page.reload();
    await expect(page.getByText("Signed in as Ada Wide")).toBeVisible();
    await expect(page.getByText(liveOn)).toBeVisible();
  });

  test("a guest signs in without an account and signs out", async ({ page }) => {
    await page.goto("/sign-in");
    await page.getByRole("button", { name: "Continue without an account" }).click();
    await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    await page.getByRole("region", { name: "Sign out" }).getByRole("button", { name: "Sign out…" }).click();
    await page
      .getByRole("dialog", { name: "Sign out of the guest account?" })
      .getByRole("button", { name: "Sign out and lose the notes" })
      .click();
    await expect(page.getByText("You have signed out.")).toBeVisible();
  });

  test("the contact form says so when EmailJS cannot be reached", async ({ page }) => {
    await page.goto("/contact");
    await sendContactForm(page, { name: "Ann", email: "ann@example.com", text: "Hello" });
    await expect(page.getByRole("alert")).toHaveText(
      "We couldn't reach the server. Check your connection and try again.",
    );
  });
});
