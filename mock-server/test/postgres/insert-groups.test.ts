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
    { limits: { documentsPerUser: 2 }, tries: 3, kept: 2, refused: "quota" },
    // Three writes a second (each action needs one left): of five at once, two are refused.
    { limits: { writesPerSecondPerUser: 3 }, tries: 5, kept: 3, refused: "rate" },
  ])(
    "fail only the actions past a limit ($refused), others in their groups stored",
    async ({ limits, tries, kept, refused }) => {
      const { appId, data } = await app(limits);
      const status = await outcomes([
        ...Array.from({ length: 8 }, (_, i) => insertOne(data, { _id: `ok-${i}` }, user(`writer-${i}`))),
        ...Array.from({ length: tries }, (_, i) => insertOne(data, { _id: `busy-${i}` }, user("busy"))),
        ...Array.from({ length: 8 }, (_, i) => insertOne(data, { _id: `ok-${8 + i}` }, user(`writer-${8 + i}`))),
      ]);
      expect(status.slice(0, 8)).toEqual(Array(8).fill("stored"));
      expect(status.slice(8, 8 + tries).sort()).toEqual(
        [...Array(tries - kept).fill(refused), ...Array(kept).fill("stored")].sort(),
      );
      expect(status.slice(8 + tries)).toEqual(Array(8).fill("stored"));
      // What was acknowledged is what is stored, nothing else.
      const keys = await stored(appId);
      expect(keys.filter((k) => k.startsWith("ok-"))).toHaveLength(16);
      expect(keys.filter((k) => k.startsWith("busy-"))).toHaveLength(kept);
    },
  );
});
