/**
 * The inspector's document operations: list with a filter, replace and delete one document, with
 * system rights; writes reach change-stream subscribers like any other write. Both stores.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/data/documents.ts";
import { call, newApp, testApp } from "../helpers/app.ts";
import { until } from "../helpers/until.ts";

let app: FastifyInstance;
beforeAll(async () => {
  app = await testApp();
});
afterAll(async () => {
  await app.close();
});

const url = (appId: string, suffix = "") => `/_mock/v1/apps/${appId}/data/db/notes${suffix}`;
const oid = (n: number) => ({ $oid: `65a1b2c3d4e5f60718293a${String(n).padStart(2, "0")}` });

async function seed(appId: string) {
  const { response } = await call(app, "insertDocuments", {
    method: "POST",
    url: url(appId),
    payload: {
      documents: [
        { _id: oid(1), title: "Milk", done: true, n: { $numberLong: "9007199254740993" } },
        { _id: oid(2), title: "Eggs", done: false, at: { $date: "2026-11-22T10:00:00Z" } },
        { _id: oid(3), title: "Bread", done: true, price: { $numberDecimal: "1.10" } },
      ],
    },
  });
  expect(response.statusCode).toBe(201);
}

const list = (appId: string, query = "") => call(app, "listDocuments", { method: "GET", url: url(appId, query) });
const filterQuery = (filter: unknown, more = "") => `?filter=${encodeURIComponent(JSON.stringify(filter))}${more}`;

/** The change events of the app's collections from now on. */
async function changes(appId: string): Promise<{ events: ChangeEvent[]; stop: () => void }> {
  const runtime = await app.emulator.apps.get(appId);
  const events: ChangeEvent[] = [];
  const stop = await runtime!.data.subscribe((event) => events.push(event));
  return { events, stop };
}

describe("listDocuments with a filter", () => {
  it("answers the matching documents and their count, paged, as canonical Extended JSON", async () => {
    const appId = await newApp(app);
    await seed(appId);
    const { response, body } = await list(appId, filterQuery({ done: true }));
    expect(response.statusCode).toBe(200);
    expect(body.total).toBe(2);
    expect(body.documents.map((d: { title: string }) => d.title)).toEqual(["Milk", "Bread"]);
    expect(body.documents[0].n).toEqual({ $numberLong: "9007199254740993" });
    expect(body.documents[1].price).toEqual({ $numberDecimal: "1.10" });

    const second = await list(appId, filterQuery({ done: true }, "&skip=1&limit=1"));
    expect(second.body).toMatchObject({ total: 2, documents: [{ title: "Bread" }] });
    // Extended JSON in the filter: an ObjectId, a date range.
    expect((await list(appId, filterQuery({ _id: oid(2) }))).body.documents).toEqual([
      {
        _id: oid(2),
        title: "Eggs",
        done: false,
        at: { $date: { $numberLong: String(Date.parse("2026-11-22T10:00:00Z")) } },
      },
    ]);
    expect((await list(appId, filterQuery({ at: { $gte: { $date: "2026-01-01T00:00:00Z" } } }))).body.total).toBe(1);
    // An empty filter is no filter.
    expect((await list(appId, "?filter=")).body.total).toBe(3);
  });

  it("refuses a filter that is not JSON, not a document, or not a query MongoDB accepts (400)", async () => {
    const appId = await newApp(app);
    await seed(appId);
    for (const filter of [
      "{done:",
      "[1]",
      JSON.stringify({ done: { $nope: 1 } }),
      JSON.stringify({ n: { $numberInt: "x" } }),
    ]) {
      const { response, body } = await list(appId, `?filter=${encodeURIComponent(filter)}`);
      expect(response.statusCode, filter).toBe(400);
      expect(body.code).toBe("ValidationError");
    }
    expect((await list("no-such-app", filterQuery({}))).response.statusCode).toBe(404);
  });
});

describe("replaceDocument", () => {
  it("replaces the matching document, keeps its _id, and announces a replace", async () => {
    const appId = await newApp(app);
    await seed(appId);
    const { events, stop } = await changes(appId);
    try {
      const { response, body } = await call(app, "replaceDocument", {
        method: "POST",
        url: url(appId, "/replace-one"),
        payload: { filter: { _id: oid(2) }, replacement: { title: "Eggs (6)", count: { $numberInt: "6" } } },
      });
      expect(response.statusCode).toBe(200);
      expect(body.document).toEqual({ _id: oid(2), title: "Eggs (6)", count: { $numberInt: "6" } });
      expect((await list(appId, filterQuery({ _id: oid(2) }))).body.documents).toEqual([body.document]);
      await until(() => events.length > 0, "the replace event");
      expect(events[0]).toMatchObject({ operationType: "replace", database: "db", collection: "notes" });
    } finally {
      stop();
    }
  });

  it("answers 404 when nothing matches and 400 for an altered _id or operators, changing nothing", async () => {
    const appId = await newApp(app);
    await seed(appId);
    const replace = (payload: Record<string, unknown>) =>
      call(app, "replaceDocument", { method: "POST", url: url(appId, "/replace-one"), payload });
    const missing = await replace({ filter: { _id: oid(9) }, replacement: { title: "x" } });
    expect([missing.response.statusCode, missing.body.code]).toEqual([404, "NotFound"]);
    for (const replacement of [{ _id: oid(7), title: "x" }, { $set: { title: "x" } }]) {
      const refused = await replace({ filter: { _id: oid(1) }, replacement });
      expect([refused.response.statusCode, refused.body.code]).toEqual([400, "ValidationError"]);
    }
    const invalid = await replace({ filter: { _id: { $oid: "nope" } }, replacement: { title: "x" } });
    expect(invalid.response.statusCode).toBe(400);
    const noBody = await replace({ filter: { _id: oid(1) } });
    expect(noBody.response.statusCode).toBe(400);
    expect((await list(appId, filterQuery({ _id: oid(1) }))).body.documents[0].title).toBe("Milk");
    // The same _id in the replacement is fine.
    const same = await replace({ filter: { _id: oid(1) }, replacement: { _id: oid(1), title: "Oat milk" } });
    expect(same.body.document).toEqual({ _id: oid(1), title: "Oat milk" });
  });
});

describe("deleteDocument", () => {
  it("deletes the matching document, answers it, and announces a delete; 404 once gone", async () => {
    const appId = await newApp(app);
    await seed(appId);
    const { events, stop } = await changes(appId);
    try {
      const remove = () =>
        call(app, "deleteDocument", {
          method: "POST",
          url: url(appId, "/delete-one"),
          payload: { filter: { _id: oid(3) } },
        });
      const { response, body } = await remove();
      expect(response.statusCode).toBe(200);
      expect(body.document).toMatchObject({ _id: oid(3), title: "Bread" });
      expect((await list(appId)).body.total).toBe(2);
      await until(() => events.length > 0, "the delete event");
      expect(events[0]).toMatchObject({ operationType: "delete", documentKey: { _id: expect.anything() } });
      const again = await remove();
      expect([again.response.statusCode, again.body.code]).toEqual([404, "NotFound"]);
      const bad = await call(app, "deleteDocument", {
        method: "POST",
        url: url(appId, "/delete-one"),
        payload: { filter: "not a document" },
      });
      expect(bad.response.statusCode).toBe(400);
    } finally {
      stop();
    }
  });
});
