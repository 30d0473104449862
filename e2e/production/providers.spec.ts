/**
 * Google, Apple and Facebook on the deployed site: the instances reach the fake identity provider,
 * run as a process of its own, only through its URLs — discovery documents, key sets, the code
 * exchange (Apple's with a client-secret JWT the server signs with the app's `.p8` key), Facebook's
 * Graph API — so the production code path is what these journeys take. A sign-in goes from the
 * site to the provider's page and back through the site's callback, across both instances.
 */
import type { Page } from "@playwright/test";
import { appId, clientApi, expect, giveLargestCustomData, identityProvider, newAddress, test } from "./fixtures.ts";

async function continueWith(page: Page, provider: string) {
  const popup = page.waitForEvent("popup");
  await page.getByRole("button", { name: `Continue with ${provider}` }).click();
  const window = await popup;
  await expect(window.getByRole("heading", { level: 1, name: `Sign in with ${provider}` })).toBeVisible();
  expect(window.url().startsWith(`${identityProvider}/`)).toBe(true);
  return window;
}

const notes = (page: Page) => expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();

/** Signs in with a new account of the fake Google, from the sign-in page. */
async function newGoogleAccount(page: Page, email: string, name: string) {
  await page.goto("/sign-in");
  const window = await continueWith(page, "Google");
  await window.getByLabel("E-mail address").fill(email);
  await window.getByLabel("Name").fill(name);
  await window.getByRole("button", { name: "Add account and continue" }).click();
  await notes(page);
}

test.describe("Google, Apple and Facebook", { tag: "@production" }, () => {
  test("a new Google account signs in; it comes back as the same user after signing out", async ({ page }) => {
    const email = newAddress("google");
    await newGoogleAccount(page, email, "Ada Lovelace");
    await expect(page.getByText(`Signed in as ${email}`)).toBeVisible();
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    const userId = await page.getByRole("region", { name: "Profile" }).locator("code").innerText();

    await page.getByRole("region", { name: "Sign out" }).getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByText("You have signed out.")).toBeVisible();
    const again = await continueWith(page, "Google");
    await again.getByRole("button", { name: new RegExp(email.replace(/[.+]/g, "\\$&")) }).click();
    await notes(page);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    await expect(page.getByRole("region", { name: "Profile" }).locator("code")).toHaveText(userId);
  });

  test("a Google user whose custom data is as large as a token carries comes back through the provider's redirect", async ({
    page,
    request,
  }) => {
    const email = newAddress("wide-google");
    await newGoogleAccount(page, email, "Ada Wide");
    // Its profile, written through the API with the session the page keeps: 16 KiB of custom data.
    const record = await page.evaluate(
      (key) => JSON.parse(localStorage.getItem(key) ?? "null") as { userId: string; refreshToken: string },
      `notes:app(${appId}):session`,
    );
    const refreshed = await request.post(`${clientApi.replace(/\/app\/[^/]+$/, "")}/auth/session`, {
      headers: { authorization: `Bearer ${record.refreshToken}` },
    });
    const { access_token: accessToken } = (await refreshed.json()) as { access_token: string };
    await giveLargestCustomData(request, { userId: record.userId, accessToken }, "Ada Wide");

    // Signing in again, the site's callback sends the browser back with both tokens in its URL.
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    await page.getByRole("region", { name: "Sign out" }).getByRole("button", { name: "Sign out" }).click();
    await expect(page.getByText("You have signed out.")).toBeVisible();
    const again = await continueWith(page, "Google");
    await again.getByRole("button", { name: new RegExp(email.replace(/[.+]/g, "\\$&")) }).click();
    await notes(page);
    await expect(page.getByText("Signed in as Ada Wide")).toBeVisible();
  });

  test("Sign in with Apple posts back to the site, and a cancelled Facebook sign-in says so", async ({ page }) => {
    await page.goto("/sign-up");
    const facebook = await continueWith(page, "Facebook");
    await facebook.getByRole("button", { name: "Cancel" }).click();
    await expect(page.getByRole("alert")).toHaveText("You cancelled signing in with Facebook. Nothing was changed.");

    const email = newAddress("apple");
    const apple = await continueWith(page, "Apple");
    await apple.getByLabel("E-mail address").fill(email);
    await apple.getByLabel("Name").fill("Grace Hopper");
    await apple.getByRole("button", { name: "Add account and continue" }).click();
    await notes(page);
    await expect(page.getByText(`Signed in as ${email}`)).toBeVisible();
  });

  test("a guest links Facebook from the account page and stops being a guest", async ({ page }) => {
    await page.goto("/sign-in");
    await page.getByRole("button", { name: "Continue without an account" }).click();
    await notes(page);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
    const section = page.getByRole("region", { name: "Sign in with Google, Apple or Facebook" });
    const popup = page.waitForEvent("popup");
    await section.getByRole("button", { name: "Link Facebook" }).click();
    const window = await popup;
    await window.getByLabel("E-mail address").fill(newAddress("facebook"));
    await window.getByRole("button", { name: "Add account and continue" }).click();
    await expect(section.getByText("Facebook: linked. You can sign in with it.")).toBeVisible();
    await expect(page.getByRole("region", { name: "Profile" }).getByText("Registered")).toBeVisible();
  });
});
