/** API keys: created (secret shown once), used to sign in, disabled (sign-in refused), deleted. */
import { expect, signIn, test, webAppConfig } from "../../fixtures/index.ts";

test("creates a key, signs in with it, disables it (refused), and deletes it", async ({
  page,
  emu,
  browser,
  testApp,
  emailjs,
}) => {
  await emu.seedUser("keys@example.com", "secret-1");
  await signIn(page, "keys@example.com", "secret-1");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "API keys" })).toBeVisible();

  await page.getByLabel("Key name").fill("bad name!");
  await page.getByRole("button", { name: "Create key" }).click();
  await expect(page.getByLabel("Key name")).toHaveAttribute("aria-invalid", "true");
  await page.getByLabel("Key name").fill("ci-runner");
  await page.getByRole("button", { name: "Create key" }).click();
  const secretField = page.getByLabel("Secret of the key ci-runner");
  await expect(secretField).toHaveValue(/^[0-9a-f]{64}$/);
  const secret = await secretField.inputValue();
  await page.getByRole("button", { name: "I have copied the key" }).click();
  await expect(secretField).toBeHidden();
  await expect(page.getByText(secret)).toHaveCount(0);

  // Another browser signs in with the key, as the same user.
  const other = await browser.newContext();
  await other.addInitScript(
    (config) => {
      (window as unknown as { __APP_CONFIG__: unknown }).__APP_CONFIG__ = config;
    },
    webAppConfig(testApp, emailjs),
  );
  const keyPage = await other.newPage();
  const signInWithKey = async () => {
    await keyPage.goto("/sign-in");
    await keyPage.getByLabel("API key", { exact: true }).fill(secret);
    await keyPage.getByRole("button", { name: "Sign in with API key" }).click();
  };
  await signInWithKey();
  await expect(keyPage.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
  await expect(keyPage.getByText("Signed in as keys@example.com")).toBeVisible();
  await other.clearCookies();
  await keyPage.evaluate(() => localStorage.clear());

  await page.getByRole("button", { name: "Disable ci-runner" }).click();
  await expect(page.getByText("The key ci-runner is now disabled.")).toBeVisible();
  await signInWithKey();
  await expect(keyPage.getByRole("alert")).toHaveText("This API key is not valid, or it has been disabled.");

  await page.getByRole("button", { name: "Delete ci-runner" }).click();
  await page
    .getByRole("dialog", { name: "Delete the key ci-runner?" })
    .getByRole("button", { name: "Delete key" })
    .click();
  await expect(page.getByText("The key ci-runner has been deleted.")).toBeVisible();
  await expect(page.getByText("You have no API keys yet.")).toBeVisible();
  const [user] = await emu.users();
  expect(user?.apiKeys).toEqual([]);
  await other.close();
});
