/**
 * The inspector's data tab: documents shown with their BSON types, the Extended JSON on demand,
 * filtered with a MongoDB query, added, edited, deleted, and the collection dropped — every write
 * seen by the app's change streams like any other.
 */

import type { MockControlClient } from "@harness/openapi/mock-control";
import type { Page } from "@playwright/test";
import { emulatorUrl, expect, expectAccessible, test } from "../../fixtures/index.ts";

test("shows typed documents and filters, adds, edits, deletes them and drops the collection", async ({
  page,
  mock,
  testApp,
}) => {
  const { appId } = testApp;
  const path = { appId, database: "shop", collection: "items" };
  await mock.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
    params: { path },
    body: {
      documents: [
        {
          _id: { $oid: "65a1b2c3d4e5f60718293a50" },
          name: "Milk",
          count: { $numberInt: "2" },
          stock: { $numberLong: "9007199254740993" },
          price: { $numberDecimal: "1.10" },
          ratio: { $numberDouble: "0.5" },
          added: { $date: "2026-11-22T10:00:00Z" },
          tags: ["dairy"],
        },
        { _id: "eggs", name: "Eggs", count: { $numberInt: "12" } },
      ],
    },
  });

  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/data/shop/items`);
  await expect(page.getByText("Documents 1–2 of 2.")).toBeVisible();
  const documents = page.getByRole("list", { name: "Documents" }).getByRole("listitem");
  const milk = documents.filter({ hasText: "ObjectId 65a1b2c3d4e5f60718293a50" });
  const eggs = documents.filter({ hasText: '"eggs"' });
  await milk.getByText("ObjectId 65a1b2c3d4e5f60718293a50").click();
  const fields = milk.getByRole("table", { name: "Fields" });
  for (const [field, type, value] of [
    ["count", "Int32", "2"],
    ["stock", "Int64", "9007199254740993"],
    ["price", "Decimal128", "1.10"],
    ["ratio", "Double", "0.5"],
    ["added", "Date", "2026-11-22T10:00:00.000Z"],
    ["tags.0", "String", "dairy"],
  ] as const) {
    await expect(fields.getByRole("row", { name: new RegExp(`^${field.replace(".", "\\.")} `) })).toHaveText(
      `${field}${type}${value}`,
    );
  }
  await milk.getByText("Extended JSON", { exact: true }).click();
  await expect(milk.locator("pre")).toContainText('"$numberDecimal": "1.10"');
  await expectAccessible(page, { strict: true });

  // Filter with a query in Extended JSON.
  await page.getByLabel("Filter (a MongoDB query as Extended JSON)").fill('{"count": {"$gt": 5}}');
  await page.getByRole("button", { name: "Filter", exact: true }).click();
  await expect(page.getByText("Documents 1–1 of 1 matching the filter.")).toBeVisible();
  await expect(documents).toHaveCount(1);
  await expect(eggs).toContainText("name: Eggs · count: 12");
  await page.getByLabel("Filter (a MongoDB query as Extended JSON)").fill('{"count": {"$nope": 1}}');
  await page.getByRole("button", { name: "Filter", exact: true }).click();
  await expect(page.getByRole("alert")).toContainText("The filter is refused");
  await page.getByRole("link", { name: "Show all" }).click();
  await expect(page.getByText("Documents 1–2 of 2.")).toBeVisible();

  // Edit the eggs.
  await eggs.getByText("name: Eggs · count: 12").click();
  await eggs.getByText("Edit", { exact: true }).click();
  await eggs
    .getByLabel(/The document as Extended JSON \(canonical/)
    .fill('{"_id": "eggs", "name": "Eggs", "count": {"$numberInt": "6"}}');
  await eggs.getByRole("button", { name: "Save document" }).click();
  await expect(page.getByText("name: Eggs · count: 6")).toBeVisible();

  // Add one, delete one.
  await page.getByText("Add a document").click();
  await page.getByLabel(/The document as Extended JSON \(an _id/).fill('{"name": "Bread"}');
  await page.getByRole("button", { name: "Add document" }).click();
  await expect(page.getByText("Documents 1–3 of 3.")).toBeVisible();
  await page.getByRole("button", { name: 'Delete the document "eggs"' }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete document" }).click();
  await expect(page.getByText("Documents 1–2 of 2.")).toBeVisible();
  const { data } = await mock.GET("/_mock/v1/apps/{appId}/data/{database}/{collection}", { params: { path } });
  expect(data?.documents.map((d) => d.name)).toEqual(["Milk", "Bread"]);

  await page.getByRole("button", { name: "Drop collection…" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Drop collection" }).click();
  await expect(page.getByText("The collection is empty.")).toBeVisible();
});

/**
 * Opens a collection's data tab, then writes to it one document after another for `writeMs` (a
 * busy app's live events) and waits until the page shows every write; answers how many times the
 * page read the app's collection listing meanwhile. With `slowMs`, the listing answers that late,
 * as counts over a million documents would.
 */
async function listingReadsUnderWrites(
  { page, mock, appId }: { page: Page; mock: MockControlClient; appId: string },
  collection: string,
  { writeMs, slowMs = 0 }: { writeMs: number; slowMs?: number },
): Promise<number> {
  const path = { appId, database: "shop", collection };
  const insert = (n: number) =>
    mock.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
      params: { path },
      body: { documents: [{ _id: `item-${n}`, n: { $numberInt: String(n) } }] },
    });
  await insert(0);
  const listing = new URL(`${emulatorUrl}/_mock/v1/apps/${encodeURIComponent(appId)}/data`).pathname;
  if (slowMs > 0) {
    await page.route(
      (url) => url.pathname === listing,
      async (route) => {
        await new Promise((resolve) => setTimeout(resolve, slowMs));
        await route.continue();
      },
    );
  }
  await page.goto(`${emulatorUrl}/_mock/#/apps/${encodeURIComponent(appId)}/data/shop/${collection}`);
  await expect(page.getByText("item-0").first()).toBeVisible();
  let reads = 0;
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === listing) reads++;
  });
  const started = Date.now();
  let n = 0;
  while (Date.now() - started < writeMs) await insert(++n);
  // The page catches up: the collection's count is every write's.
  const collections = page.getByRole("table", { name: "1 collection" });
  await expect(collections.getByRole("row", { name: new RegExp(`shop\\.${collection}`) })).toContainText(
    String(n + 1),
    { timeout: 15_000 },
  );
  return reads;
}

test("reads the page again at most once a second while writes keep coming", async ({ page, mock, testApp }) => {
  const reads = await listingReadsUnderWrites({ page, mock, appId: testApp.appId }, "stream", { writeMs: 3000 });
  expect(reads).toBeGreaterThanOrEqual(2);
  expect(reads).toBeLessThanOrEqual(5);
});

test("reads the page again less often while its reads are slow (a production database's counts)", async ({
  page,
  mock,
  testApp,
}) => {
  // A read takes 0.2 s, so the page reads at most every 2 s: once as the writes begin, once after
  // (once a second, it read three times).
  const reads = await listingReadsUnderWrites({ page, mock, appId: testApp.appId }, "slow", {
    writeMs: 1500,
    slowMs: 200,
  });
  expect(reads).toBe(2);
});
