/**
 * The inspector's requests and faults tabs: the journal filtered by operation, status and text,
 * with each reply (status, error code, redacted body), and cleared; a fault for one MongoDB action
 * (insertOne fails, find works) removed on its own; the clock put back on real time.
 */
import { emulatorUrl, expect, expectAccessible, test } from "../../fixtures/index.ts";

test("filters and clears the journal, shows replies redacted", async ({ page, testApp, request }) => {
  const { appId } = testApp;
  const api = `${emulatorUrl}/api/client/v2.0/app/${appId}`;
  await request.get(`${api}/location`);
  await request.post(`${api}/auth/providers/local-userpass/login`, {
    data: { username: "grace@example.com", password: "not-the-password" },
  });
  const session = (await (await request.post(`${api}/auth/providers/anon-user/login`, { data: {} })).json()) as {
    access_token: string;
  };

  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/requests`);
  const journal = page.getByRole("table", { name: /requests?, newest first/ });
  await expect(journal.getByRole("row")).toHaveCount(4);
  await page.getByLabel("Status").fill("401");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page.getByRole("table", { name: "1 matching request, newest first" })).toBeVisible();
  const failed = journal.getByRole("row").nth(1);
  await expect(failed).toContainText("InvalidPassword");
  await failed.getByText(/POST .*\/login/).click();
  await expect(failed).toContainText("Reply 401 InvalidPassword");
  await expect(failed).toContainText('"password": "[redacted]"');

  // Each filter change re-renders the page: wait for it before typing into the new form.
  await page.getByRole("link", { name: "Show all" }).click();
  await expect(page.getByRole("table", { name: "3 requests, newest first" })).toBeVisible();
  await page.getByLabel("Operation").selectOption("login");
  await expect(page.getByLabel("Status")).toHaveValue("");
  await page.getByLabel("Text").fill("anon-user");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect(page.getByRole("table", { name: "1 matching request, newest first" })).toBeVisible();
  const anonymous = journal.getByRole("row").nth(1);
  await anonymous.getByText(/POST .*anon-user\/login/).click();
  await expect(anonymous).toContainText('"access_token": "[redacted]"');
  await expect(page.getByText(session.access_token)).toHaveCount(0);
  await expectAccessible(page, { strict: true });

  await page.getByRole("button", { name: "Clear journal" }).click();
  await page.getByRole("link", { name: "Show all" }).click();
  await expect(page.getByText("No requests yet.")).toBeVisible();
});

test("removes one fault, fails insertOne but not find, and puts the clock back", async ({ page, emu, request }) => {
  const { appId } = emu;
  const api = `${emulatorUrl}/api/client/v2.0/app/${appId}`;
  const session = (await (await request.post(`${api}/auth/providers/anon-user/login`, { data: {} })).json()) as {
    access_token: string;
  };
  await emu.addFault({ operationId: "getLocation", status: 404, times: 5 });
  await emu.addFault({ operationId: "login", status: 400, times: 5 });
  await emu.advanceClock(600);
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/faults`);
  const faults = page.getByRole("table", { name: /active faults?/ });
  await page.getByRole("button", { name: /Remove the fault .* \(getLocation\)/ }).click();
  await expect(faults.getByRole("row")).toHaveCount(2);
  await expect(faults).toContainText("login");

  await page.getByLabel("Operation").selectOption("callFunction");
  await page.getByLabel(/Function or MongoDB action/).fill("insertOne");
  await page.getByLabel("Status (empty: only delay)").fill("400");
  await page.getByLabel("Body (text or JSON)").fill('{"error":"insert refused","error_code":"MongoDBError"}');
  await page.getByRole("button", { name: "Add fault" }).click();
  await expect(faults.getByRole("row", { name: /callFunction insertOne/ })).toBeVisible();
  await expectAccessible(page, { strict: true });

  const call = (name: string, argument: Record<string, unknown>) =>
    request.post(`${api}/functions/call`, {
      headers: { Authorization: `Bearer ${session.access_token}` },
      data: {
        name,
        service: "mongodb-atlas",
        arguments: [{ database: "notes-app", collection: "notes", ...argument }],
      },
    });
  expect((await call("find", { query: {} })).status()).toBe(200);
  const refused = await call("insertOne", { document: { title: "a" } });
  expect([refused.status(), await refused.json()]).toEqual([
    400,
    { error: "insert refused", error_code: "MongoDBError" },
  ]);

  await expect(page.getByText("600 s ahead of real time")).toBeVisible();
  await page.getByRole("button", { name: "Reset to real time" }).click();
  await expect(page.getByText("(real time)")).toBeVisible();
  expect((await emu.mock.GET("/_mock/v1/apps/{appId}/clock", { params: { path: { appId } } })).data?.offsetMs).toBe(0);
});
