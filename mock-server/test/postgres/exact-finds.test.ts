/**
 * A `find` of a query the store decides exactly (a user's own documents through the owner rule,
 * plain equalities), without a projection, is answered from the stored texts (mongo-actions.ts
 * `exactFind`, the stores' `exactTexts`): on both stores its reply is, byte for byte, what reading,
 * matching, sorting and writing the documents answers — over every type a sort meets — and where
 * a stored text cannot be answered as it is (a sort key that is an array, a document, a large
 * Int64; a regular expression stored), the store says so and the action reads as before.
 */
import { Long, ObjectId } from "bson";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { AppConfig } from "../../src/config/app-config.ts";
import { MongoService } from "../../src/data/mongo-actions.ts";
import { MemoryDocuments } from "../../src/store/memory/documents.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { DocumentStore } from "../../src/store/store.ts";
import { emulatorDatabase, type TestDatabase } from "../helpers/postgres.ts";

const at = (ms: number) => new Date(ms);
const oid = (n: number) => new ObjectId(n.toString(16).padStart(24, "0"));

/** Owner a's sort keys meet every scalar type, ties (natural order decides), absence and null. */
const scalars: unknown[] = [
  3,
  -1,
  2.5,
  3,
  2 ** 40,
  -0.5,
  "b",
  "a",
  "é",
  "nul\u0000in",
  "",
  null,
  undefined,
  true,
  false,
  at(0),
  at(1_700_000_000_000),
  oid(2),
  oid(1),
  Number.NaN,
  Number.POSITIVE_INFINITY,
  3,
];

function documents(): Record<string, unknown>[] {
  const docs: Record<string, unknown>[] = scalars.map((n, i) => ({
    _id: `a${i}`,
    owner: "a",
    ...(n === undefined ? {} : { n }),
    s: `s${i % 4}`,
    tag: i % 3 === 0 ? ["x", "y"] : "x",
  }));
  // Sort keys the stored texts do not answer alone (an array, a document, an Int64 past 2^53)…
  docs.push(
    { _id: "b0", owner: "b", n: [3, 1] },
    { _id: "b1", owner: "b", n: { z: 1, a: 2 } },
    { _id: "b2", owner: "b", n: 2 },
  );
  docs.push({ _id: "d0", owner: "d", n: Long.fromString("9007199254740993") }, { _id: "d1", owner: "d", n: 1 });
  // … and a stored regular expression.
  docs.push({ _id: "c0", owner: "c", n: 1, re: /a+/i }, { _id: "c1", owner: "c", n: 0 });
  return docs;
}

const finds: [string, Record<string, unknown>][] = [
  ["find", { query: { owner: "a" }, sort: { n: 1 } }],
  ["find", { query: { owner: "a" }, sort: { n: -1 } }],
  ["find", { query: { owner: "a" }, sort: { s: 1, n: -1 } }],
  ["find", { query: { owner: "a" }, sort: { absent: 1 } }],
  ["find", { query: { owner: "a" }, sort: { n: 1 }, limit: 5 }],
  ["find", { query: { owner: "a" } }],
  ["find", { query: { owner: "a" }, limit: 3 }],
  ["find", { query: { owner: "a", tag: "y" }, sort: { n: 1 } }],
  ["find", { query: { owner: { $in: ["a", "zz"] }, s: { $eq: "s1" } }, sort: { n: -1 } }],
  ["find", { query: { owner: "nobody" }, sort: { n: 1 } }],
  ["findOne", { query: { owner: "a" }, sort: { n: -1 } }],
  ["findOne", { query: { owner: "a" } }],
  ["findOne", { query: { owner: "nobody" } }],
];
const unanswered: Record<string, unknown>[] = [
  { query: { owner: "b" }, sort: { n: 1 } },
  { query: { owner: "d" }, sort: { n: 1 } },
  { query: { owner: "c" }, sort: { n: 1 } },
];
// Finds no store answers from texts: a projection, a dotted sort, a query the engine decides.
const others: Record<string, unknown>[] = [
  { query: { owner: "a" }, project: { n: 1 }, sort: { n: 1 } },
  { query: { owner: "a" }, sort: { "n.x": 1 } },
  { query: { owner: "a", n: { $gt: 0 } }, sort: { n: 1 } },
];

function services(data: DocumentStore, config: Partial<AppConfig> = {}) {
  // The same store without exactTexts: every find reads and evaluates the documents.
  const plain = Object.create(data) as DocumentStore & { exactTexts: undefined };
  plain.exactTexts = undefined;
  const make = (store: DocumentStore) =>
    new MongoService({ appId: "exact", config: config as AppConfig, data: store }, { kind: "system" });
  return { fast: make(data), slow: make(plain) };
}

const stores: {
  name: string;
  /** Whether the store answers the `unanswered` finds from texts too (the memory store's keys are its documents). */
  answersAll: boolean;
  open(): Promise<{ data: DocumentStore; close(): Promise<void> }>;
}[] = [
  {
    name: "memory",
    answersAll: true,
    open: async () => ({ data: new MemoryDocuments(), close: async () => undefined }),
  },
  {
    name: "PostgreSQL",
    answersAll: false,
    open: async () => {
      const database: TestDatabase = await emulatorDatabase("exact-finds");
      const store = await PostgresStore.open({ url: database.url });
      await store.apps.create({ appId: "exact", domainId: "exact", createdAt: 0, appDir: null, config: {} });
      return {
        data: store.apps.scope("exact").data,
        close: async () => {
          await store.close();
          await database.drop();
        },
      };
    },
  },
];

describe.each(stores)("a find answered from stored texts, $name store", ({ open, answersAll }) => {
  let data: DocumentStore;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ data, close } = await open());
    await services(data).fast.run("insertMany", { database: "db", collection: "c", documents: documents() });
  });

  afterAll(async () => {
    await close?.();
  });

  it("answers what reading and evaluating the documents answers, byte for byte", async () => {
    const { fast, slow } = services(data);
    const exactTexts = vi.spyOn(data as Required<Pick<DocumentStore, "exactTexts">>, "exactTexts");
    for (const [action, args] of finds) {
      exactTexts.mockClear();
      const call = { database: "db", collection: "c", ...args };
      const answer = await fast.runText(action as "find", call);
      expect(answer, JSON.stringify(args)).toBe(await slow.runText(action as "find", call));
      // …and it was answered from the texts.
      expect(exactTexts, JSON.stringify(args)).toHaveBeenCalledTimes(1);
      expect(await exactTexts.mock.results[0]?.value).toBeDefined();
    }
    exactTexts.mockRestore();
    const sorted = JSON.parse(await fast.runText("find", { database: "db", collection: "c", ...finds[0]![1] }));
    expect(sorted).toHaveLength(scalars.length);
  });

  it("reads as before where the texts do not answer, and answers the same", async () => {
    const { fast, slow } = services(data);
    const exactTexts = vi.spyOn(data as Required<Pick<DocumentStore, "exactTexts">>, "exactTexts");
    for (const args of [...unanswered, ...others]) {
      exactTexts.mockClear();
      const call = { database: "db", collection: "c", ...args };
      expect(await fast.runText("find", call), JSON.stringify(args)).toBe(await slow.runText("find", call));
      const answered = await exactTexts.mock.results[0]?.value;
      expect(answered !== undefined, JSON.stringify(args)).toBe(answersAll && unanswered.includes(args));
    }
    exactTexts.mockRestore();
  });

  it("leaves texts longer than a reply's bound to the scan, which sizes them exactly", async () => {
    const { fast, slow } = services(data);
    const long = "x".repeat(1_100_000);
    const documents = [0, 1, 2].map((n) => ({ _id: `long${n}`, owner: "long", n, long }));
    await fast.run("insertMany", { database: "db", collection: "c", documents });
    const exactTexts = vi.spyOn(data as Required<Pick<DocumentStore, "exactTexts">>, "exactTexts");
    const call = { database: "db", collection: "c", query: { owner: "long" }, sort: { n: -1 } };
    const answer = await fast.runText("find", call);
    expect(answer).toBe(await slow.runText("find", call));
    expect(JSON.parse(answer)).toHaveLength(3);
    // 3.3 million characters of text may be past the reply's 16 MiB by the bound of six bytes each.
    expect((await exactTexts.mock.results[0]?.value) !== undefined).toBe(answersAll);
    exactTexts.mockRestore();
  });

  it("counts the documents it examines against the app's limit", async () => {
    const { fast, slow } = services(data, { queryDocsExaminedLimit: 10 });
    const call = { database: "db", collection: "c", query: { owner: "a" }, sort: { n: 1 } };
    const refusal = { errorCode: "MongoDBError", message: "operation exceeded the limit of 10 documents examined" };
    await expect(fast.runText("find", call)).rejects.toMatchObject(refusal);
    await expect(slow.runText("find", call)).rejects.toMatchObject(refusal);
    // The first few in natural order are only those few.
    const few = { ...call, sort: {}, limit: 4 };
    expect(await fast.runText("find", few)).toBe(await slow.runText("find", few));
  });
});
