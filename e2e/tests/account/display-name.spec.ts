/** The display name (custom user data) is the name the app shows and fills in. */
import { expect, signIn, test } from "../../fixtures/index.ts";

test("greets by display name, also after a reload, and fills it in as the sender's name", async ({ page, emu }) => {
  const user = await emu.seedUser("ada@example.com", "secret-1");
  await emu.insertDocuments("notes-app", "profiles", [{ user_id: user.id, display_name: "Ada Lovelace" }]);
  await emu.seedNotes(user.id, [{ title: "Engine" }]);
  await signIn(page, "ada@example.com", "secret-1");
  const who = page.getByRole("banner").getByText("Signed in as");
  await expect(who).toHaveText("Signed in as Ada Lovelace");
  await page.reload();
  await expect(who).toHaveText("Signed in as Ada Lovelace");

  await page.getByRole("button", { name: "E-mail “Engine”" }).click();
  await expect(page.getByRole("dialog").getByLabel("Your name")).toHaveValue("Ada Lovelace");
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Contact" }).click();
  await expect(page.getByLabel("Your name")).toHaveValue("Ada Lovelace");
  await expect(page.getByLabel("Your e-mail address")).toHaveValue("ada@example.com");

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Account" }).click();
  await expect(page.getByLabel("Display name")).toHaveValue("Ada Lovelace");
  await page.getByLabel("Display name").fill("Countess of Lovelace");
  await page.getByRole("button", { name: "Save display name" }).click();
  await expect(who).toHaveText("Signed in as Countess of Lovelace");
  // Opened by a reload, the account page starts without an access token: the field still shows the name.
  await page.reload();
  await expect(page.getByRole("heading", { level: 2, name: "Custom data" })).toBeVisible();
  await expect(page.getByLabel("Display name")).toHaveValue("Countess of Lovelace");
});
