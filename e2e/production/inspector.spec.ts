/**
 * An operator's inspector: not on the public site (public.spec.ts), but at one instance's own
 * address — reached over a tunnel, say — with the instances' control token. Its page's origin is
 * the instance's, not the site's, and its edits must work there: they are the point of opening it.
 */
import { appId, clientApi, controlToken, expect, newAddress, Rehearsal, test } from "./fixtures.ts";

test.describe("the inspector at an instance's own address", { tag: "@production" }, () => {
  test("asks for the control token, says when it is wrong, and then reads and edits", async ({ page, request }) => {
    const [instance] = (await new Rehearsal().instances()).filter((i) => i.running);
    // The Requests tab first: it reads the operations list, which it must read again once the
    // token is given.
    await page.goto(`${instance!.url}/_mock/#/apps/${encodeURIComponent(appId)}/requests`);
    await expect(page.getByRole("heading", { name: "Control token required" })).toBeVisible();
    await page.getByLabel("Control token", { exact: true }).fill("not-the-token");
    await page.getByRole("button", { name: "Use token" }).click();
    await expect(page.getByRole("alert")).toHaveText("The control token given was not accepted.");
    await page.getByLabel("Control token", { exact: true }).fill(controlToken);
    await page.getByRole("button", { name: "Use token" }).click();
    await expect(page.getByRole("heading", { name: "Control token required" })).toHaveCount(0);
    await expect(page.getByText(/request(s)?, newest first|No requests yet\./).first()).toBeVisible();

    // An edit: a confirmed user made through the inspector signs in on the public site.
    await page.goto(`${instance!.url}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
    const email = newAddress("inspected");
    const password = `pw-${email}`;
    const form = page.getByRole("form", { name: "Create an e-mail/password user" });
    await form.getByLabel("E-mail").fill(email);
    await form.getByLabel(/^Password/).fill(password);
    await form.getByRole("button", { name: "Create user" }).click();
    await expect(page.getByText(`Created ${email} (active).`)).toBeVisible();
    const login = await request.post(`${clientApi}/auth/providers/local-userpass/login`, {
      data: { username: email, password },
    });
    expect(login.status()).toBe(200);
  });
});
