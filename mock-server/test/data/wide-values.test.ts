/**
 * Wide objects' keys kept from their building (data/wide-keys.ts) and the walks of wide values in
 * slices (data/wide-values.ts): each answers what its one-step walk answers, on values read as a
 * large request's are (the sliced body parse, then the sliced Extended JSON reading), and other
 * work runs between their slices.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { calculateObjectSize, EJSON, ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import { encodeChange, sseData } from "../../src/app-services/functions/change-stream.ts";
import { bsonSize, keptSize } from "../../src/data/bson-size.ts";
import { type ChangeEvent, cloneValue, type Document, fromEJSON, toEJSONText } from "../../src/data/documents.ts";
import { fromEJSONInSlices, fromEJSONTextInSlices } from "../../src/data/ejson-in-slices.ts";
import { freezeTree, storeDocument } from "../../src/data/ejson-text.ts";
import { hasNoKeys, keepKeys, keptKeys, keysOf, setKey, wideFrom } from "../../src/data/wide-keys.ts";
import {
  bsonSizeInSlices,
  cloneInSlices,
  documentSizeInSlices,
  freezeInSlices,
  holdsWide,
  jsonTextInSlices,
  storeInSlices,
  textInSlices,
} from "../../src/data/wide-values.ts";
import { parseJsonBodyInSlices } from "../../src/http/json-body.ts";
import { exactConditions, exactConditionsInSlices } from "../../src/store/exact-query.ts";
import { indexedEqualities } from "../../src/store/memory/documents.ts";
import { pushdown, pushdownInSlices } from "../../src/store/postgres/pushdown.ts";
import { anonymousLogin, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";
import { typed, wide } from "../helpers/wide-shapes.ts";

/** Members of every kind, and a negative zero, a null and an empty object. */
const typedMembers = (i: number) => ({ ...typed(i), negativeZero: { $numberDouble: "-0.0" }, none: null, empty: {} });

/** Request texts of the shapes the walks meet: each has wide containers somewhere. */
const shapes: Record<string, string> = {
  "a query of 5,000 conditions": JSON.stringify({ query: wide(5_000, () => ({ $exists: false })) }),
  "a wide document of typed values": JSON.stringify({ document: wide(1_100, typedMembers) }),
  "wide objects nested in wide objects and arrays": JSON.stringify({
    document: { ...wide(2_000, (i) => i), inner: wide(3_000, (i) => ({ v: [i] })), list: [wide(1_100, typedMembers)] },
  }),
  "wide values a few levels down": JSON.stringify({
    a: { b: { c: { d: { e: [{ f: wide(1_100, typedMembers) }] } } } },
  }),
  "wide values many levels down": JSON.stringify({
    a: { b: { c: { d: { e: { f: { g: { h: { i: { j: [{ k: wide(1_100, typedMembers) }] } } } } } } } } },
  }),
  "many small values, none wide": JSON.stringify({ list: Array.from({ length: 100 }, () => wide(100, (i) => [i])) }),
  "$-operators over wide clauses": JSON.stringify({
    query: {
      $and: [wide(3_000, (i) => ({ $gt: i })), { $or: [wide(2_000, (i) => `v${i}`)] }],
      k: { $in: Array.from({ length: 5_000 }, (_, i) => ({ $oid: `64b7f${String(i).padStart(19, "0")}` })) },
    },
  }),
  "duplicate keys, the first place and the last value": `{"document":{"a":1,${JSON.stringify(wide(20_000, (i) => i)).slice(1, -1)},"b":2,"a":{"$numberLong":"3"}}}`,
  "a wide array": JSON.stringify({ documents: Array.from({ length: 5_000 }, (_, i) => ({ n: i, t: `Note ${i}` })) }),
};

/** A request's text read as a large action's arguments are. */
async function read(text: string): Promise<Document> {
  return (await fromEJSONInSlices(await parseJsonBodyInSlices(text))) as Document;
}

/** Every plain object and array of a value. */
function containers(value: unknown, into: object[] = []): object[] {
  if (value === null || typeof value !== "object") return into;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return into;
  into.push(value);
  for (const member of Object.values(value)) containers(member, into);
  return into;
}

describe("the keys of wide objects", () => {
  it.each(Object.entries(shapes))(
    "are kept as listed, by the sliced readers: %s",
    async (name, text) => {
      const raw = await parseJsonBodyInSlices(text);
      const value = await read(text);
      for (const root of [raw, value]) {
        let kept = 0;
        for (const node of containers(root)) {
          const keys = keptKeys(node);
          if (keys === undefined) continue;
          kept++;
          expect(keys.length).toBeGreaterThanOrEqual(wideFrom);
          expect(keys.join() === Object.keys(node).join()).toBe(true);
        }
        if (!text.includes("documents") && !name.includes("none wide")) expect(kept).toBeGreaterThan(0);
      }
    },
    60_000,
  );

  it("are kept for the fields an update's change event names (each walk of the event lists them)", async () => {
    const app = await testApp();
    try {
      const appId = await newOpenApp(app);
      const token = (await anonymousLogin(app, appId)).access_token;
      const namespace = { database: "d", collection: "c" };
      await mongoAction(app, appId, token, "insertOne", { ...namespace, document: { _id: 1 } });
      const runtime = await app.emulator.apps.get(appId);
      const events: ChangeEvent[] = [];
      const stop = await runtime!.data.subscribe((event) => events.push(event));
      const fields = wide(2_000, (i) => i);
      const updated = await mongoAction(app, appId, token, "updateOne", {
        ...namespace,
        query: { _id: 1 },
        update: { $set: fields },
      });
      expect(updated.response.statusCode).toBe(200);
      stop();
      const named = events[0]!.updateDescription!.updatedFields;
      expect(Object.keys(named)).toHaveLength(2_000);
      expect(keptKeys(named)).toEqual(Object.keys(named));
    } finally {
      await app.close();
    }
  });

  it("are not kept for an object with an array index for a key (those are listed first)", async () => {
    const text = `{"x":{${JSON.stringify(wide(20_000, (i) => i)).slice(1, -1)},"7":1,"inner":${JSON.stringify(wide(20_000, (i) => i))}}}`;
    const { x } = (await parseJsonBodyInSlices(text)) as { x: Record<string, unknown> };
    expect(Object.keys(x)[0]).toBe("7");
    expect(keptKeys(x)).toBeUndefined();
    expect(keptKeys(x.inner as object)).toEqual(Object.keys(x.inner as object));
    expect(keysOf(x)).toEqual(Object.keys(x));
  }, 60_000);

  it("grow with the keys set on the object, and are dropped for an array index", () => {
    const obj = wide(wideFrom, (i) => i);
    keepKeys(obj, Object.keys(obj));
    setKey(obj, "_id", 1);
    setKey(obj, "k0", 2);
    expect(keptKeys(obj)).toEqual(Object.keys(obj));
    expect(keptKeys(obj)!.at(-1)).toBe("_id");
    setKey(obj, "12", 3);
    expect(keptKeys(obj)).toBeUndefined();
    expect(keysOf(obj)[0]).toBe("12");
    expect(hasNoKeys(obj)).toBe(false);
    expect(hasNoKeys({})).toBe(true);
    expect(keptKeys(wide(wideFrom - 1, (i) => i))).toBeUndefined();
  }, 60_000);
});

describe("wide values walked in slices", () => {
  it.each(Object.entries(shapes))(
    "answer what the one-step walks answer: %s",
    async (_, text) => {
      const value = await read(text);
      const oneStep = (await read(text)) as Document;
      // (Wherever a wide value stands, or when there are many small ones.)
      expect(holdsWide(value)).toBe(true);
      // The text (compared as strings: `toBe` keeps a failure's report short).
      expect((await textInSlices(value)) === toEJSONText(value)).toBe(true);
      expect((await textInSlices(value)) === EJSON.stringify(value, { relaxed: false })).toBe(true);
      // The sizes.
      expect(await bsonSizeInSlices(value)).toBe(bsonSize(value, new WeakMap()));
      expect(await documentSizeInSlices(value)).toBe(calculateObjectSize(value));
      // The copy: equal, its containers its own, its wide objects' keys kept.
      const copy = await cloneInSlices(value);
      expect(toEJSONText(copy) === toEJSONText(cloneValue(value))).toBe(true);
      const originals = new Set(containers(value));
      for (const node of containers(copy)) {
        expect(originals.has(node)).toBe(false);
        const keys = keptKeys(node);
        if (keys !== undefined) expect(keys.join() === Object.keys(node).join()).toBe(true);
      }
      // The freeze: the same containers frozen.
      await freezeInSlices(copy);
      freezeTree(oneStep);
      expect(containers(copy).map(Object.isFrozen)).toEqual(containers(oneStep).map(Object.isFrozen));
      expect(containers(copy).every(Object.isFrozen)).toBe(true);
      // The body written back as JSON (a custom function's payload), whole or without a top-level key.
      const body = (await parseJsonBodyInSlices(text)) as Document;
      expect((await jsonTextInSlices(body)) === JSON.stringify(body)).toBe(true);
      const [left, ...kept] = keysOf(body);
      const without = JSON.stringify(Object.fromEntries(kept.map((key) => [key, body[key]])));
      expect((await jsonTextInSlices(body, new Set([left!]))) === without).toBe(true);
    },
    60_000,
  );

  it("store a document as storeDocument does, its text kept", async () => {
    const doc = await read(shapes["a wide document of typed values"]!);
    const { stored, text } = await storeInSlices(doc.document as Document);
    const oneStep = storeDocument(cloneValue(doc.document as Document));
    expect(text === toEJSONText(oneStep)).toBe(true);
    expect(keptSize(stored)).toBe(keptSize(oneStep));
    expect(Object.isFrozen(stored)).toBe(true);
    // The text is the kept one, not written again.
    expect(toEJSONText(stored)).toBe(text);
    expect(toEJSONText({ outer: [stored] })).toBe(`{"outer":[${text}]}`);
  }, 60_000);

  it("answer the one-step walks on values built here: an _id added, functions, undefined", async () => {
    const doc: Document = { ...wide(3_000, (i) => (i % 3 === 0 ? undefined : i % 3 === 1 ? -0 : "x")), f: () => 1 };
    keepKeys(doc, Object.keys(doc));
    setKey(doc, "_id", new ObjectId("64b7f0000000000000000001"));
    expect(holdsWide(doc)).toBe(true);
    expect(await textInSlices(doc)).toBe(toEJSONText(doc));
    expect(await bsonSizeInSlices(doc)).toBe(bsonSize(doc, new WeakMap()));
    expect(await documentSizeInSlices(doc)).toBe(calculateObjectSize(doc));
    expect(await textInSlices([doc, undefined, () => 1])).toBe(toEJSONText([doc, undefined, () => 1]));
    expect(await textInSlices(undefined)).toBe(toEJSONText(undefined));
  }, 60_000);

  it("are not needed for the usual small values", () => {
    expect(holdsWide({ title: "Note", tags: ["a", "b"], at: new Date(0), n: { a: [1, { b: 2 }] } })).toBe(false);
    expect(holdsWide(fromEJSON({ _id: { $oid: "64b7f0000000000000000001" } }))).toBe(false);
    expect(holdsWide("text")).toBe(false);
    // Many members near the top, wide or not, are walked in slices too.
    expect(holdsWide(Array.from({ length: 100 }, () => wide(100, (i) => i)))).toBe(true);
  }, 60_000);

  it("let other work run between their slices", async () => {
    // (The wide object a dozen levels down: the walks find it wherever it stands.)
    let deep: unknown = wide(50_000, () => ({ $exists: false }));
    for (let level = 0; level < 12; level++) deep = { [`l${level}`]: level % 2 ? [deep] : deep };
    const value = await read(JSON.stringify({ query: deep }));
    let turns = 0;
    let walking = true;
    const counting = (async () => {
      while (walking) {
        await nextTurn();
        turns++;
      }
    })();
    // Each walk of 50,000 members (each one step of 10 ms or more) gives the others turns.
    const given: number[] = [];
    const walked = async <T>(walk: () => Promise<T>): Promise<T> => {
      const before = turns;
      const result = await walk();
      given.push(turns - before);
      return result;
    };
    const copy = await walked(() => cloneInSlices(value));
    const text = await walked(() => textInSlices(copy));
    await walked(() => bsonSizeInSlices(copy));
    await walked(() => freezeInSlices(copy));
    // A worker's answer (or a stored row) read back, and a change event written to a stream.
    const readBack = await walked(() => fromEJSONTextInSlices(text));
    const event = { operationType: "insert", fullDocument: copy } as Document;
    const encoded = await walked(() => encodeChange(event));
    // A body written back as the JSON it came as.
    const body = await parseJsonBodyInSlices(JSON.stringify({ payload: deep }));
    const bodyText = await walked(() => jsonTextInSlices(body));
    walking = false;
    await counting;
    expect(given.every((n) => n >= 1)).toBe(true);
    expect(toEJSONText(readBack)).toBe(text);
    expect(encoded).toBe(sseData(toEJSONText(event)));
    expect(bodyText === JSON.stringify(body)).toBe(true);
  }, 60_000);

  /** The value with its plain objects and arrays made again, without kept keys (each walk lists them). */
  const unkept = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(unkept)
      : value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype
        ? Object.fromEntries(Object.entries(value).map(([key, member]) => [key, unkept(member)]))
        : value;

  it("leave the queries' other walks their answers: exact conditions, indexed equalities, pushdown", async () => {
    const conditions = (i: number) =>
      i % 2 === 0 ? `v${i}` : { $in: [`w${i}`, { $oid: "64b7f0000000000000000001" }] };
    const exact = { query: { $and: [wide(3_000, conditions), { _id: "a" }], ...wide(2_000, conditions) } };
    const inexact = { query: { ...wide(3_000, conditions), late: { $gt: 1 } } };
    for (const shape of [exact, inexact]) {
      const text = JSON.stringify(shape);
      const { query } = (await read(text)) as { query: Document };
      // (The common types' reader keeps a wide object's keys as it lists them once.)
      const common = (fromEJSON(JSON.parse(text)) as { query: Document }).query;
      expect(keptKeys(common)).toEqual(Object.keys(common));
      const listed = unkept(common) as Document;
      expect(keptKeys(query)).toBeDefined();
      expect(keptKeys(listed)).toBeUndefined();
      expect(JSON.stringify(exactConditions(query))).toBe(JSON.stringify(exactConditions(listed)));
      // (Each query object's answer is kept: the sliced one asked of another read of the query.)
      const again = ((await read(text)) as { query: Document }).query;
      expect(JSON.stringify(await exactConditionsInSlices(again))).toBe(JSON.stringify(exactConditions(listed)));
      expect(indexedEqualities(query)).toEqual(indexedEqualities(listed));
      expect(await pushdownInSlices(query, 5, { hidden: true })).toEqual(pushdown(listed, 5, { hidden: true }));
    }
    expect(exactConditions(((await read(JSON.stringify(exact))) as { query: Document }).query)).toHaveLength(5_001);
  }, 60_000);
});
