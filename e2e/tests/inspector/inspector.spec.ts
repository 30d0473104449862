/**
 * The inspector at the emulator's `/_mock/`: it shows an app's users and captured mail, follows live
 * changes, renders mail in a script-less sandbox, and its actions (confirm a user, advance the clock,
 * reset the app) work from the keyboard-accessible controls.
 */
import { emulatorUrl, expect, expectAccessible, test, webUrl } from "../../fixtures/index.ts";

test("shows a user created through the control API and a captured e-mail", async ({
  page,
  mock,
  testApp,
  emailjs,
  request,
}) => {
  const { appId } = testApp;
  const created = await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "ada@example.com", password: "secret-123", confirmed: false },
  });
  expect(created.response.status).toBe(201);
  // An e-mail through the EmailJS API, sent as a browser page would (with an Origin).
  const sent = await request.post(`${emulatorUrl}/api/v1.0/email/send`, {
    headers: { Origin: webUrl },
    data: {
      user_id: emailjs.publicKey,
      service_id: "local_service",
      template_id: "note_email",
      template_params: {
        to_email: "bob@example.com",
        from_name: "Ada",
        note_title: "Shopping list",
        note_body: "Milk, see https://shop.example.com/list",
      },
    },
  });
  expect([sent.status(), await sent.text()]).toEqual([200, "OK"]);

  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
  await expect(page.getByRole("heading", { name: `App ${appId}` })).toBeVisible();
  // The app's HTTPS endpoints (the template's), and its Data API, off.
  await expect(page.getByText("GET /notes/stats", { exact: true })).toBeVisible();
  await expect(page.getByText("off", { exact: true })).toBeVisible();
  const users = page.getByRole("table", { name: /user/ });
  await expect(users.getByRole("row", { name: /ada@example\.com/ })).toContainText("pending");

  // Live: a user added while the page is open appears without a reload.
  await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "cy@example.com", password: "secret-123", confirmed: true },
  });
  await expect(users.getByRole("row", { name: /cy@example\.com/ })).toContainText("active");

  // Confirm the pending registration.
  await page.getByRole("button", { name: "Confirm ada@example.com" }).click();
  await expect(users.getByRole("row", { name: /ada@example\.com/ })).toContainText("confirmed");

  // The captured e-mail, in a sandbox where no script runs and links open outside.
  await page
    .getByRole("navigation", { name: "Apps and accounts" })
    .getByRole("link", { name: emailjs.publicKey })
    .click();
  await expect(page.getByRole("heading", { name: `EmailJS account ${emailjs.publicKey}` })).toBeVisible();
  await page.getByRole("link", { name: "Shopping list" }).click();
  await expect(page.getByRole("heading", { name: "Shopping list" })).toBeVisible();
  const frame = page.getByTitle("E-mail body: Shopping list");
  await expect(frame).toHaveAttribute("sandbox", "allow-popups");
  await expect(
    page.frameLocator('iframe[title="E-mail body: Shopping list"]').getByText("Sent by Ada with Notes."),
  ).toBeVisible();
  await expect(page.getByRole("link", { name: "https://shop.example.com/list" })).toHaveAttribute("target", "_blank");

  await expectAccessible(page, { strict: true });
});

test("advances the app's clock and resets the app", async ({ page, mock, testApp }) => {
  const { appId } = testApp;
  await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "ada@example.com", password: "secret-123", confirmed: true },
  });
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/faults`);
  await expect(page.getByRole("heading", { name: "Clock" })).toBeVisible();

  await page.getByLabel("Seconds to advance").fill("90");
  await page.getByRole("button", { name: "Advance clock" }).click();
  await expect(page.getByText("90 s ahead of real time")).toBeVisible();
  const { data: clock } = await mock.GET("/_mock/v1/apps/{appId}/clock", { params: { path: { appId } } });
  expect(clock?.offsetMs).toBe(90_000);

  await page.getByRole("button", { name: "Reset app…" }).click();
  const dialog = page.getByRole("dialog");
  await expect(dialog).toContainText(`Reset the app ${appId}?`);
  await dialog.getByRole("button", { name: "Reset app" }).click();
  await expect(page.getByText("(real time)")).toBeVisible();
  await page.getByRole("link", { name: "Users" }).click();
  await expect(page.getByText("No users yet.")).toBeVisible();

  await expectAccessible(page, { strict: true });
});

test("opens the journal entry an App Services error links to, with the password redacted", async ({
  page,
  testApp,
  request,
}) => {
  const { appId } = testApp;
  const failed = await request.post(`${emulatorUrl}/api/client/v2.0/app/${appId}/auth/providers/local-userpass/login`, {
    data: { username: "nobody@example.com", password: "not-the-password" },
  });
  expect(failed.status()).toBe(401);
  const { link } = (await failed.json()) as { link: string };
  // The entry of this very request: its id is the one the reply says.
  expect(link).toMatch(new RegExp(`/_mock/#/apps/.+/requests/${failed.headers()["x-request-id"]}$`));

  await page.goto(link);
  const entry = page.getByRole("row").filter({ has: page.locator("details[open]") });
  await expect(entry).toContainText("login");
  await expect(entry).toContainText("401");
  await expect(entry).toContainText('"password": "[redacted]"');
  await expect(page.getByText("not-the-password")).toHaveCount(0);
});

test("an update that changes nothing on the page (another app created) leaves its elements in place", async ({
  page,
  mock,
  testApp,
}) => {
  const { appId } = testApp;
  await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "ada@example.com", password: "secret-123", confirmed: true },
  });
  // The page shows the app's time to the minute: start the app's clock just past a minute's turn,
  // so it shows the same for the whole test.
  const { data: clock } = await mock.GET("/_mock/v1/apps/{appId}/clock", { params: { path: { appId } } });
  const advanceBy = 61 - Math.floor((clock!.nowMs / 1000) % 60);
  await mock.POST("/_mock/v1/apps/{appId}/clock", { params: { path: { appId } }, body: { advanceBy } });
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
  const confirmed = page.getByRole("row", { name: /ada@example\.com/ });
  await expect(confirmed).toBeVisible();
  // A mark on the element itself (not an attribute): a copy made by a re-render would not have it.
  await confirmed.evaluate((row) => Object.assign(row, { markedByTest: true }));

  const { data } = await mock.POST("/_mock/v1/apps", { body: {} });
  const otherId = data!.appId;
  try {
    // The update was handled (the sidebar lists the new app), and the page's rows are the same
    // elements: a click in progress on them would not be lost.
    const sidebar = page.getByRole("navigation", { name: "Apps and accounts" });
    await expect(sidebar.getByRole("link", { name: otherId })).toBeVisible();
    expect(await confirmed.evaluate((row) => (row as unknown as { markedByTest?: boolean }).markedByTest)).toBe(true);
  } finally {
    await mock.DELETE("/_mock/v1/apps/{appId}", { params: { path: { appId: otherId } } });
  }
});

test("an app made elsewhere updates the sidebar alone on a page that does not show apps", async ({ page, mock }) => {
  const { data: account } = await mock.POST("/_mock/v1/emailjs/accounts", { body: {} });
  const publicKey = account!.publicKey;
  await page.goto(`${emulatorUrl}/_mock/#/emailjs/${encodeURIComponent(publicKey)}/mail`);
  await expect(page.getByRole("heading", { name: `EmailJS account ${publicKey}` })).toBeVisible();
  // What the page reads to render itself: asked again only when it re-renders.
  const pageReads: string[] = [];
  page.on("request", (request) => {
    if (new URL(request.url()).pathname.startsWith(`/_mock/v1/emailjs/accounts/${publicKey}`))
      pageReads.push(request.url());
  });
  const { data } = await mock.POST("/_mock/v1/apps", { body: {} });
  const otherId = data!.appId;
  try {
    const sidebar = page.getByRole("navigation", { name: "Apps and accounts" });
    await expect(sidebar.getByRole("link", { name: otherId })).toBeVisible();
    expect(pageReads).toEqual([]);
  } finally {
    await mock.DELETE("/_mock/v1/apps/{appId}", { params: { path: { appId: otherId } } });
  }
});

test.describe("a database trigger of the notes collection", () => {
  test.use({
    appConfig: {
      triggers: [
        {
          type: "DATABASE",
          name: "notes audit",
          functionName: "noteStats",
          database: "notes-app",
          collection: "notes",
          operationTypes: ["INSERT"],
        },
      ],
    },
  });

  test("is shown suspended once its collection is dropped, live, and resumed from the page", async ({
    page,
    emu,
    mock,
  }) => {
    const { appId } = emu;
    await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
    await expect(page.getByRole("heading", { name: `App ${appId}` })).toBeVisible();
    const suspended = page.getByRole("region", { name: "Suspended triggers" });
    await expect(suspended).toHaveCount(0);
    // Dropped elsewhere (another tab, a test): the open page shows it without a reload.
    await emu.insertDocuments("notes-app", "notes", [{ title: "kept" }]);
    await emu.dropCollection("notes-app", "notes");
    await expect(suspended).toContainText("notes audit: the collection notes-app.notes was dropped");
    await expectAccessible(page, { strict: true });
    await suspended.getByRole("button", { name: "Resume notes audit" }).click();
    await expect(page.getByText("Trigger notes audit resumed")).toBeVisible();
    await expect(suspended).toHaveCount(0);
    const { data } = await mock.GET("/_mock/v1/apps/{appId}", { params: { path: { appId } } });
    expect(data?.suspendedTriggers).toEqual([]);
  });
});

test("shows what changed while its live events were away once they are back", async ({ page, mock, testApp }) => {
  const { appId } = testApp;
  // The live events are refused until the route is lifted (the inspector retries every 2 s).
  await page.route("**/_mock/v1/events", (route) => route.abort());
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/users`);
  const connection = page.locator("#connection");
  await expect(connection).toHaveText("Disconnected, retrying…");
  await expect(page.getByRole("heading", { name: `App ${appId}` })).toBeVisible();
  const created = await mock.POST("/_mock/v1/apps/{appId}/users", {
    params: { path: { appId } },
    body: { email: "while-away@example.com", password: "secret-123", confirmed: true },
  });
  expect(created.response.status).toBe(201);
  await page.unroute("**/_mock/v1/events");
  await expect(connection).toHaveText("Live", { timeout: 10_000 });
  await expect(page.getByRole("row", { name: /while-away@example\.com/ })).toBeVisible();
});
