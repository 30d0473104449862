/**
 * "Continue with Google" (Apple, Facebook) against the harness's fake identity provider: a new
 * account, a returning one, a cancelled sign-in, a closed window, a refusal, and linking a
 * provider from the account page. The provider's page is the fake's account picker, in the window
 * the app opens.
 */
import type { Page } from "@playwright/test";
import { expectAccessible } from "../../fixtures/accessibility.ts";
import { expect, test } from "../../fixtures/index.ts";
import { signIn } from "../../fixtures/sign-in.ts";

/** Clicks a provider's button and answers the window it opens. */
async function continueWith(page: Page, provider: string) {
  const popup = page.waitForEvent("popup");
  await page.getByRole("button", { name: `Continue with ${provider}` }).click();
  const window = await popup;
  await expect(window.getByRole("heading", { level: 1, name: `Sign in with ${provider}` })).toBeVisible();
  return window;
}

test("a new account signs in with Google; it comes back as the same user", { tag: "@smoke" }, async ({ page, emu }) => {
  await page.goto("/sign-in");
  await expectAccessible(page);
  const window = await continueWith(page, "Google");
  await expectAccessible(window);
  await window.getByLabel("E-mail address").fill("ada@example.com");
  await window.getByLabel("Name").fill("Ada Lovelace");
  await window.getByRole("button", { name: "Add account and continue" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await expect(page.getByText("Signed in as ada@example.com")).toBeVisible();
  await expect.poll(() => window.isClosed()).toBe(true);
  const [user] = await emu.users();
  expect(user?.identities.map((i) => i.provider_type)).toEqual(["oauth2-google"]);
  expect(user?.name).toBe("Ada Lovelace");

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
  // The returning account is listed in the provider's window.
  const again = await continueWith(page, "Google");
  await again.getByRole("button", { name: /ada@example\.com/ }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  expect((await emu.users()).map((u) => u.id)).toEqual([user?.id]);
});

test("signs up with Apple from the sign-up page, as an account the provider knew", async ({ page, emu }) => {
  await emu.identityProviderAccount("grace@example.com", "Grace Hopper");
  await page.goto("/sign-up");
  const window = await continueWith(page, "Apple");
  await window.getByRole("button", { name: /grace@example\.com/ }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  const [user] = await emu.users();
  expect(user?.identities.map((i) => i.provider_type)).toEqual(["oauth2-apple"]);
  expect(user?.name).toBe("Grace Hopper");
});

test("a cancelled sign-in and a closed window each say so, and sign nobody in", async ({ page, emu }) => {
  await page.goto("/sign-in");
  const cancelled = await continueWith(page, "Facebook");
  await cancelled.getByRole("button", { name: "Cancel" }).click();
  await expect(page.getByRole("alert")).toHaveText("You cancelled signing in with Facebook. Nothing was changed.");

  const closed = await continueWith(page, "Google");
  await expect(page.getByRole("status").filter({ hasText: "Continue in the Google window" })).toBeVisible();
  await closed.close();
  await expect(page.getByRole("alert")).toHaveText(
    "The Google window was closed before you finished signing in. Try again when you are ready.",
  );
  await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
  expect(await emu.users()).toEqual([]);
});

test.describe("an app that restricts Google sign-ins to a domain", () => {
  test.use({ appConfig: { providers: { "oauth2-google": { domainRestrictions: ["example.org"] } } } });

  test("refuses another domain's account in plain words", async ({ page, emu }) => {
    await page.goto("/sign-in");
    const window = await continueWith(page, "Google");
    await window.getByLabel("E-mail address").fill("mallory@example.com");
    await window.getByRole("button", { name: "Add account and continue" }).click();
    await expect(page.getByRole("alert")).toHaveText(
      "This Google account's e-mail domain cannot sign in here. Use an account of your organisation.",
    );
    expect(await emu.users()).toEqual([]);
  });
});

test("links Apple to a password account from the account page; it then signs in as that user", async ({
  page,
  emu,
}) => {
  await emu.seedUser("lin@example.com", "correct horse");
  await signIn(page, "lin@example.com", "correct horse");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();

  const section = page.getByRole("region", { name: "Sign in with Google, Apple or Facebook" });
  const popup = page.waitForEvent("popup");
  await section.getByRole("button", { name: "Link Apple" }).click();
  const window = await popup;
  await window.getByLabel("E-mail address").fill("lin@icloud.example");
  await window.getByRole("button", { name: "Add account and continue" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "Apple is linked: you can now sign in with it." }),
  ).toBeVisible();
  await expect(section.getByText("Apple: linked. You can sign in with it.")).toBeVisible();
  await expect(page.getByRole("region", { name: "Profile" }).getByText("Apple", { exact: false })).toBeVisible();
  await expectAccessible(page);

  const [user] = await emu.users();
  expect(user?.identities.map((i) => i.provider_type)).toEqual(["local-userpass", "oauth2-apple"]);
  await page.getByRole("button", { name: "Sign out" }).click();
  const again = await continueWith(page, "Apple");
  await again.getByRole("button", { name: /lin@icloud\.example/ }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  expect((await emu.users()).map((u) => u.id)).toEqual([user?.id]);
});
