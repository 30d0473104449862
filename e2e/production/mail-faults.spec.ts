/**
 * Mail through an outage of the mail server: a sign-up while it is away is acknowledged, its
 * confirmation waits in the instances' outbox (in the database), and arrives once the server is
 * back, with a link that works. Nothing but conditions bounds the waits.
 */
import { expect, Mailbox, newAddress, signUp, test } from "./fixtures.ts";

test.describe("mail, through faults", { tag: "@production" }, () => {
  test("a sign-up while the mail server is away gets its link once it is back", async ({
    page,
    mailbox,
    rehearsal,
  }) => {
    test.setTimeout(60_000);
    const email = newAddress("outage");
    const retriesBefore = await rehearsal.mailRetries();
    await rehearsal.stopMailServer();
    try {
      await signUp(page, email, "correct horse");

      // An instance tried to deliver it and could not; it waits in the outbox, and nothing arrived.
      await expect.poll(() => rehearsal.mailRetries(), { timeout: 10_000 }).toBeGreaterThan(retriesBefore);
      expect(await rehearsal.queuedMail()).toBeGreaterThanOrEqual(1);
      expect(mailbox.to(email)).toEqual([]);
    } finally {
      await rehearsal.startMailServer();
    }

    // Retried with a backoff that doubles from 1 s: the next try after the server is back delivers it.
    const mail = await mailbox.latest(email, /^Confirm your Notes account$/, { timeout: 20_000 });
    expect(mailbox.to(email)).toHaveLength(1);
    const linkTab = await page.context().newPage();
    await linkTab.goto(Mailbox.link(mail, "/confirm"));
    await expect(linkTab.getByRole("heading", { level: 1, name: "Your e-mail address is confirmed" })).toBeVisible();
    await expect(page.getByRole("heading", { level: 1, name: "Your notes" })).toBeVisible();
    await expect.poll(() => rehearsal.queuedMail()).toBe(0);
  });
});
