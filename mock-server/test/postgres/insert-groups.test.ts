/**
 * Group commit of insertOne actions (store/postgres/insert-groups.ts, docs/decisions/0022):
 * actions that arrive together are written by one statement, each answered as it would be alone —
 * an existing `_id`, a user past a limit or out of writes fail only that action — and every
 * acknowledged one is committed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Document } from "../../src/data/documents.ts";
import type { PgDocuments } from "../../src/store/postgres/documents.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { QuotaExceededError, WriteRateExceededError, type Writer } from "../../src/store/store.ts";
import { adminQuery, emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

let database: TestDatabase;
let store: PostgresStore;

beforeAll(async () => {
  database = await emulatorDatabase("insert-groups");
  store = await PostgresStore.open({ url: database.url });
});

afterAll(async () => {
  await store?.close();
  await database?.drop();
});

let apps = 0;
async function app(limits: Document): Promise<{ appId: string; data: PgDocuments }> {
  const appId = `groups-${++apps}`;
  await store.apps.create({ appId, domainId: `domain-${appId}`, createdAt: 0, appDir: null, config: { limits } });
  return { appId, data: store.apps.scope(appId).data as PgDocuments };
}

/** An insertOne as the actions plan it: true when stored, false for an existing `_id`. */
const insertOne = (data: PgDocuments, doc: Document, writer?: Writer) =>
  data.write(
    "db",
    "notes",
    async () => ({
      changes: [{ op: "insert", doc }],
      events: () => [],
      result: (applied) => applied.duplicateAt === undefined,
    }),
    writer,
  );

const user = (userId: string): Writer => ({ userId, anonymous: false });

async function stored(appId: string): Promise<string[]> {
  const { rows } = await adminQuery(
    database.url,
    "SELECT ejson::jsonb ->> '_id' AS id FROM documents WHERE app_id = $1 AND db = 'db' AND coll = 'notes' ORDER BY 1",
    [appId],
  );
  return rows.map((r) => r.id as string);
}

type Outcome = "stored" | "duplicate" | "quota" | "rate";
async function outcomes(actions: Promise<boolean>[]): Promise<(Outcome | string)[]> {
  return (await Promise.allSettled(actions)).map((o) => {
    if (o.status === "fulfilled") return o.value ? "stored" : "duplicate";
    if (o.reason instanceof QuotaExceededError) return "quota";
    if (o.reason instanceof WriteRateExceededError) return "rate";
    return String(o.reason);
  });
}

describe("insertOne actions written together", () => {
  it("go out in one statement, an existing _id answered to its own action", async () => {
    const { appId, data } = await app({});
    expect(await insertOne(data, { _id: "taken" })).toBe(true);
    const before = { ...data.groups.counts };
    // Sent at once: the first go out alone, the rest wait for them and go out together.
    const status = await outcomes([
      ...Array.from({ length: 10 }, (_, i) => insertOne(data, { _id: `a-${i}` }, user(`writer-${i}`))),
      insertOne(data, { _id: "taken" }, user("late")),
      ...Array.from({ length: 10 }, (_, i) => insertOne(data, { _id: `b-${i}` }, user(`writer-${i}`))),
    ]);
    expect(status).toEqual([...Array(10).fill("stored"), "duplicate", ...Array(10).fill("stored")]);
    expect(data.groups.counts.groups - before.groups).toBeGreaterThan(0);
    expect(data.groups.counts.grouped - before.grouped).toBeGreaterThan(1);
    expect(await stored(appId)).toEqual(
      ["taken", ...Array.from({ length: 10 }, (_, i) => [`a-${i}`, `b-${i}`]).flat()].sort(),
    );
    // The documents count for their writers, as alone.
    const { rows } = await adminQuery(
      database.url,
      "SELECT user_id, documents::int AS n FROM user_usage WHERE app_id = $1 ORDER BY user_id",
      [appId],
    );
    expect(rows).toEqual(Array.from({ length: 10 }, (_, i) => ({ user_id: `writer-${i}`, n: 2 })));
  });

  it.each([
    // Two places: of three at once, one is refused.
    { limits: { documentsPerUser: 2 }, tries: 3, least: 2, most: 2, refused: "quota" },
    // Three writes a second (each action needs one left): of eight at once, three are stored, and
    // one more for each third of a second the eight took on a busy machine (the allowance refills).
    { limits: { writesPerSecondPerUser: 3 }, tries: 8, least: 3, most: 7, refused: "rate" },
  ])(
    "fail only the actions past a limit ($refused), others in their groups stored",
    async ({ limits, tries, least, most, refused }) => {
      const { appId, data } = await app(limits);
      const status = await outcomes([
        ...Array.from({ length: 8 }, (_, i) => insertOne(data, { _id: `ok-${i}` }, user(`writer-${i}`))),
        ...Array.from({ length: tries }, (_, i) => insertOne(data, { _id: `busy-${i}` }, user("busy"))),
        ...Array.from({ length: 8 }, (_, i) => insertOne(data, { _id: `ok-${8 + i}` }, user(`writer-${8 + i}`))),
      ]);
      expect(status.slice(0, 8)).toEqual(Array(8).fill("stored"));
      const busy = status.slice(8, 8 + tries);
      expect(busy.every((o) => o === "stored" || o === refused)).toBe(true);
      const kept = busy.filter((o) => o === "stored").length;
      expect(kept).toBeGreaterThanOrEqual(least);
      expect(kept).toBeLessThanOrEqual(most);
      expect(status.slice(8 + tries)).toEqual(Array(8).fill("stored"));
      // What was acknowledged is what is stored, nothing else.
      const keys = await stored(appId);
      expect(keys.filter((k) => k.startsWith("ok-"))).toHaveLength(16);
      expect(keys.filter((k) => k.startsWith("busy-"))).toHaveLength(kept);
    },
  );

  // Writers who wrote before have their usage rows: a group of them is counted, and refused, as
  // each would be alone.
  describe("of writers who wrote before", () => {
    async function usage(appId: string) {
      const { rows } = await adminQuery(
        database.url,
        "SELECT user_id, documents::int AS n, document_bytes::int AS bytes FROM user_usage WHERE app_id = $1 ORDER BY user_id",
        [appId],
      );
      return rows as { user_id: string; n: number; bytes: number }[];
    }
    const writers = (n: number, from = 0) =>
      Array.from({ length: n }, (_, i) => `writer-${String(from + i).padStart(2, "0")}`);

    it("count each writer's documents and bytes, anonymous writers under their own limits", async () => {
      const { appId, data } = await app({ documentsPerAnonymousUser: 3 });
      const anonymous = (userId: string): Writer => ({ userId, anonymous: true });
      const as = (w: string) => (w < "writer-06" ? user(w) : anonymous(w));
      // One write each, alone: every writer has its row.
      for (const w of writers(12)) await insertOne(data, { _id: `first-${w}` }, as(w));
      const before = { ...data.groups.counts };
      const both = await outcomes(
        writers(12).flatMap((w) =>
          [1, 2].map((k) => insertOne(data, { _id: `${w}-${k}`, text: "x".repeat(k) }, as(w))),
        ),
      );
      expect(both).toEqual(Array(24).fill("stored"));
      expect(data.groups.counts.groups - before.groups).toBeGreaterThan(0);
      // Anonymous writers are at their three now: one more each is refused, the others' stored.
      const more = await outcomes(writers(12).map((w) => insertOne(data, { _id: `${w}-3` }, as(w))));
      expect(more).toEqual([...Array(6).fill("stored"), ...Array(6).fill("quota")]);
      const counted = await usage(appId);
      expect(counted.map((r) => [r.user_id, r.n])).toEqual(writers(12).map((w) => [w, w < "writer-06" ? 4 : 3]));
      // The bytes counted are those of the stored texts.
      const { rows } = await adminQuery(
        database.url,
        "SELECT owner, sum(octet_length(ejson))::int AS bytes FROM documents WHERE app_id = $1 GROUP BY owner ORDER BY owner",
        [appId],
      );
      expect(counted.map((r) => ({ owner: r.user_id, bytes: r.bytes }))).toEqual(rows);
    });

    it("refuse a writer out of writes and take the others' writes once each", async () => {
      const { appId, data } = await app({ writesPerSecondPerUser: 3 });
      // writer-00 last: it has two writes left when it asks for ten (storing all would take seconds).
      for (const w of [...writers(9, 1), "writer-00"]) await insertOne(data, { _id: `first-${w}` }, user(w));
      const status = await outcomes([
        ...Array.from({ length: 10 }, (_, i) => insertOne(data, { _id: `busy-${i}` }, user("writer-00"))),
        ...writers(9, 1).map((w) => insertOne(data, { _id: `again-${w}` }, user(w))),
      ]);
      expect(status.slice(10)).toEqual(Array(9).fill("stored"));
      const busy = status.slice(0, 10);
      expect(busy.every((o) => o === "stored" || o === "rate")).toBe(true);
      expect(busy).toContain("rate");
      const kept = await stored(appId);
      const taken = busy.filter((o) => o === "stored").length;
      expect(kept.filter((k) => k.startsWith("busy-"))).toHaveLength(taken);
      expect((await usage(appId)).map((r) => r.n)).toEqual([1 + taken, ...Array(9).fill(2)]);
    });
  });
});
