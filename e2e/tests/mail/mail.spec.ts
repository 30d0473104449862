/** E-mail through EmailJS: the contact form (sendForm), e-mailing a note (send), and their errors. */

import { sendContactForm } from "../../fixtures/contact-form.ts";
import { expect, signIn, test } from "../../fixtures/index.ts";

test.describe("with a rate limit of one message per 100 seconds", () => {
  test.use({ emailjsConfig: { rateLimitPerSecond: 0.01 } });

  test("sends the contact form; a second message right away hits the rate limit", { tag: "@smoke" }, async ({
    page,
    emu,
    emailjs,
  }) => {
    await page.goto("/contact");
    const send = (name: string) =>
      sendContactForm(page, { name, email: "ann@example.com", text: `Hello from ${name}` });
    await send("Ann");
    await expect(page.getByText("Thank you! Your message has been sent. We will reply by e-mail.")).toBeVisible();
    const mail = await emu.mail("support@notes.example", { account: emailjs.publicKey });
    expect(mail).toMatchObject({
      source: "emailjs",
      kind: "contact_form",
      subject: "Contact form: Ann",
      replyTo: "ann@example.com",
    });
    expect(mail.text).toContain("Hello from Ann");

    await send("Ann again");
    await expect(page.getByRole("alert")).toHaveText(
      "You are sending messages too quickly. Wait a few seconds and try again.",
    );
    expect(await emu.mailCount({ account: emailjs.publicKey })).toBe(1);
  });
});

test.describe("with a contact template the account does not have", () => {
  test.use({ webConfig: { VITE_EMAILJS_CONTACT_TEMPLATE_ID: "missing_template" } });

  test("shows that e-mail is not set up", async ({ page }) => {
    await page.goto("/contact");
    await sendContactForm(page, { name: "Ann", email: "ann@example.com", text: "Hello" });
    await expect(page.getByRole("alert")).toHaveText(
      "E-mail sending is not set up correctly. Please contact us another way.",
    );
  });
});

test("e-mails a note with send", async ({ page, emu, emailjs }) => {
  await emu.seedUser("writer@example.com", "secret-1");
  await signIn(page, "writer@example.com", "secret-1");
  await page.getByLabel("Title").fill("Recipe");
  await page.getByLabel("Text").fill("Mix and bake.");
  await page.getByRole("button", { name: "Add note" }).click();
  await page.getByRole("button", { name: "E-mail “Recipe”" }).click();
  const dialog = page.getByRole("dialog", { name: "E-mail “Recipe”" });
  await dialog.getByLabel("Recipient's e-mail address").fill("friend@example.com");
  await dialog.getByLabel("Your name").fill("Writer");
  await dialog.getByRole("button", { name: "Send e-mail" }).click();
  await expect(page.getByText("has been sent to friend@example.com")).toBeVisible();
  const mail = await emu.mail("friend@example.com", { account: emailjs.publicKey });
  expect(mail).toMatchObject({
    kind: "note_email",
    subject: "Recipe",
    templateParams: expect.objectContaining({ note_body: "Mix and bake.", from_name: "Writer" }),
  });
});
