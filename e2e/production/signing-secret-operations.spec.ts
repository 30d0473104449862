/**
 * The operator rotates the token signing secret as docs/production.md#operations says, every
 * instance restarted in turn at each step, while a user's page stays open: the user stays signed in
 * and keeps writing until the old secret is dropped, then is asked to sign in again; a session begun
 * after the new secret took over goes on. Meanwhile the site answers every request: a rolling
 * restart through the shipped nginx site loses none (its `max_fails=0` keeps nginx from taking an
 * instance it could not reach out for 10 s, which left none to try; a starting instance holds the
 * requests it gets until it serves).
 */
import type { APIRequestContext } from "@playwright/test";
import { addNote, clientApi, confirmedAccount, expect, note, type Rehearsal, signIn, test } from "./fixtures.ts";

/** A step of the rotation, with requests through the site all along: their statuses. */
async function rotating(
  rehearsal: Rehearsal,
  request: APIRequestContext,
  step: Parameters<Rehearsal["rotateSigningSecret"]>[0],
) {
  let done = false;
  const statuses: number[] = [];
  const asking = (async () => {
    while (!done) statuses.push((await request.get(`${clientApi}/location`)).status());
  })();
  try {
    await rehearsal.rotateSigningSecret(step);
  } finally {
    done = true;
    await asking;
  }
  return statuses;
}

test.describe("the signing secret, rotated", { tag: "@production" }, () => {
  test("keeps a signed-in user signed in until the old secret is dropped", async ({
    page,
    browser,
    request,
    mailbox,
    rehearsal,
  }) => {
    test.setTimeout(90_000);
    const { email, password } = await confirmedAccount(request, mailbox, "rotation");
    await signIn(page, email, password);
    await addNote(page, "Before the rotation");

    const statuses = [
      ...(await rotating(rehearsal, request, "accept-next")),
      ...(await rotating(rehearsal, request, "sign-next")),
    ];
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // The page's session is the old secret's: accepted by the restarted instances, and counted.
    await page.reload();
    await expect(note(page, "Before the rotation")).toBeVisible();
    // (A write may meet the instance whose stream just moved: one retry.)
    await addNote(page, "After the new secret took over", { retries: 1 });
    expect(await rehearsal.fallbackTokenUses()).toBeGreaterThan(0);
    // A sign-in now gets the new secret's tokens.
    const later = await (await browser.newContext()).newPage();
    await signIn(later, email, password);

    expect((await rotating(rehearsal, request, "drop-previous")).filter((status) => status !== 200)).toEqual([]);
    // The old secret's session ends: the page asks to sign in again; the later one goes on.
    await page.reload();
    await expect(page.getByRole("heading", { level: 1, name: "Sign in" })).toBeVisible();
    await later.reload();
    await expect(note(later, "After the new secret took over")).toBeVisible();
    await signIn(page, email, password);
    await expect(note(page, "Before the rotation")).toBeVisible();
    await later.context().close();
  });
});
