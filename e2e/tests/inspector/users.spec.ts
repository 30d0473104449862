/**
 * The inspector's users tab changes users: create one with a password, revoke sessions, disable and
 * enable, delete; and shows each API key with its state.
 */
import { emulatorUrl, expect, expectAccessible, test } from "../../fixtures/index.ts";

test("creates, disables, enables and deletes users, revokes sessions, and shows API keys with their state", async ({
  page,
  mock,
  testApp,
  request,
}) => {
  const { appId } = testApp;
  const api = `${emulatorUrl}/api/client/v2.0`;
  await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "ada@example.com", password: "secret-123", confirmed: true },
  });
  const login = await request.post(`${api}/app/${appId}/auth/providers/local-userpass/login`, {
    data: { username: "ada@example.com", password: "secret-123" },
  });
  const { refresh_token } = (await login.json()) as { refresh_token: string };
  const auth = { Authorization: `Bearer ${refresh_token}` };
  await request.post(`${api}/auth/api_keys`, { headers: auth, data: { name: "ci" } });
  const old = (await (await request.post(`${api}/auth/api_keys`, { headers: auth, data: { name: "old" } })).json()) as {
    _id: string;
  };
  expect((await request.put(`${api}/auth/api_keys/${old._id}/disable`, { headers: auth })).status()).toBe(204);

  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
  const users = page.getByRole("table", { name: /user/ });
  const ada = users.getByRole("row", { name: /ada@example\.com/ });
  await expect(ada).toContainText("ci enabled");
  await expect(ada).toContainText("old disabled");
  await expect(ada).toContainText("local-userpass ·");

  await page.getByRole("textbox", { name: "E-mail", exact: true }).fill("bob@example.com");
  await page.getByLabel("Password (6–128 characters)").fill("secret-456");
  await page.getByRole("button", { name: "Create user" }).click();
  await expect(users.getByRole("row", { name: /bob@example\.com/ })).toContainText("active");

  await page.getByRole("button", { name: "Revoke the sessions of ada@example.com" }).click();
  await expect(ada.getByRole("cell").nth(3)).toHaveText(/none/);
  await page.getByRole("button", { name: "Disable ada@example.com" }).click();
  // (The row says "disabled" of the old API key already: wait for the user's own button.)
  await expect(page.getByRole("button", { name: "Enable ada@example.com" })).toBeVisible();
  const denied = await request.post(`${api}/app/${appId}/auth/providers/local-userpass/login`, {
    data: { username: "ada@example.com", password: "secret-123" },
  });
  expect(denied.status()).toBe(401);
  await page.getByRole("button", { name: "Enable ada@example.com" }).click();
  await expect(page.getByRole("button", { name: "Disable ada@example.com" })).toBeVisible();

  await page.getByRole("button", { name: "Delete bob@example.com" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText("Delete bob@example.com?");
  await expectAccessible(page, { strict: true });
  await dialog.getByRole("button", { name: "Delete user" }).click();
  await expect(users.getByRole("row", { name: /bob@example\.com/ })).toHaveCount(0);
  const { data } = await mock.GET("/_mock/v1/apps/{appId}/users", { params: { path: { appId } } });
  expect(data?.users.map((u) => [u.email, u.disabled])).toEqual([["ada@example.com", false]]);
});

test("shows the newest 200 users of an app that has more, says how many there are, and finds the others", async ({
  page,
  mock,
  testApp,
}) => {
  const { appId } = testApp;
  for (let i = 0; i < 201; i++) {
    await mock.POST("/_mock/v1/apps/{appId}/users", {
      params: { path: { appId } },
      body: { email: `user${String(i).padStart(3, "0")}@example.com`, password: "secret-123", confirmed: true },
    });
  }
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
  const users = page.getByRole("table", { name: "The newest 200 users of 201" });
  await expect(users.getByRole("row", { name: /user200@example\.com/ })).toBeVisible();
  await expect(users.getByRole("row", { name: /@example\.com/ })).toHaveCount(200);
  await expect(users.getByRole("row", { name: /user000@example\.com/ })).toHaveCount(0);

  // A search by a part of the e-mail, the case of letters ignored, finds a user past the page.
  const search = page.getByRole("search", { name: "Find users" });
  await search.getByLabel("E-mail contains").fill("USER00");
  await search.getByRole("button", { name: "Find" }).click();
  const found = page.getByRole("table", { name: "10 matching users" });
  await expect(found.getByRole("row", { name: /user000@example\.com/ })).toBeVisible();
  await expect(found.getByRole("row", { name: /@example\.com/ })).toHaveCount(10);
  await expect(page).toHaveURL(/\/users\?email=USER00$/);
  await search.getByLabel("E-mail contains").fill("@example.com");
  await search.getByRole("button", { name: "Find" }).click();
  await expect(page.getByRole("table", { name: "The newest 200 matching users of 201" })).toBeVisible();
  await search.getByLabel("E-mail contains").fill("nobody");
  await search.getByRole("button", { name: "Find" }).click();
  await expect(page.getByText("No user's e-mail contains this.")).toBeVisible();
  await search.getByRole("link", { name: "Show all" }).click();
  await expect(users).toBeVisible();
  await expect(page.getByLabel("E-mail contains")).toHaveValue("");
});

test("goes from an app's mail to the user it was sent to", async ({ page, testApp, request }) => {
  const { appId } = testApp;
  const registered = await request.post(
    `${emulatorUrl}/api/client/v2.0/app/${encodeURIComponent(appId)}/auth/providers/local-userpass/register`,
    { data: { email: "Grace@Example.com", password: "secret-123" } },
  );
  expect(registered.status()).toBe(201);
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/mail`);
  await page
    .getByRole("link", { name: /Confirm/ })
    .first()
    .click();
  await page.getByRole("link", { name: "find the user" }).click();
  const found = page.getByRole("table", { name: "1 matching user" });
  await expect(found.getByRole("row", { name: /Grace@Example\.com/ })).toContainText("pending");
  await expect(page.getByLabel("E-mail contains")).toHaveValue("Grace@Example.com");
});
