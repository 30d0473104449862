/**
 * Collations (docs/decisions/0055-collations.md): a system function's CRUD and aggregation calls
 * compare strings as the `collation` option says — matching, sorting, grouping, `distinct`,
 * counts, updates, deletes and bulk operations — on both stores (their exact answers, indexes and
 * pushdowns compare by code point, so a collated query is matched by the engine); a user function's
 * collation is refused, as App Services keeps the option to the system context; a spec MongoDB
 * refuses is refused in its words.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withCollation } from "../../src/data/collation.ts";
import { aggregate, find } from "../../src/data/query-engine.ts";
import { withQueryLimits } from "../../src/data/query-limits.ts";
import { anonymousLogin, functionResult, newApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

const operations = `exports = async (kind, a, b, c) => {
  const names = context.services.get("mongodb-atlas").db("shop").collection("names");
  try {
    switch (kind) {
      case "seed": await names.deleteMany({}); await names.insertMany(a); return null;
      case "find": return await names.find(a, { _id: 0 }, b).toArray();
      case "findSorted": return (await names.find(a, { _id: 0, name: 1 }, b).sort(c).toArray()).map((d) => d.name);
      case "ids": return (await names.find(a, {}, b).toArray()).map((d) => d._id);
      case "findOne": return await names.findOne(a, { _id: 0 }, b);
      case "count": return await names.count(a, b);
      case "countDocuments": return await names.countDocuments(a, b);
      case "distinct": return await names.distinct(a, b, c);
      case "aggregate": return await names.aggregate(a, b).toArray();
      case "updateMany": return await names.updateMany(a, b, c);
      case "updateOne": return await names.updateOne(a, b, c);
      case "deleteMany": return await names.deleteMany(a, b);
      case "findOneAndUpdate": return await names.findOneAndUpdate(a, b, c);
      case "findOneAndDelete": return await names.findOneAndDelete(a, b);
      case "bulkWrite": return await names.bulkWrite(a, b);
    }
  } catch (error) {
    return { error: error.message };
  }
};`;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    functions: { system: { source: operations, runAsSystem: true }, user: { source: operations } },
    rules: { "shop.names": { read: true, write: true, insert: true, delete: true } },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const run = (kind: string, ...args: unknown[]) => functionResult(app, appId, token, "system", [kind, ...args]);
const asUser = (kind: string, ...args: unknown[]) => functionResult(app, appId, token, "user", [kind, ...args]);
const int = (n: number) => ({ $numberInt: String(n) });

/** Case and accents apart (strength 3, the default), case alike (2), accents alike too (1). */
const caseless = { locale: "en", strength: 2 };
const baseOnly = { locale: "en", strength: 1 };

const people = [
  { _id: 1, name: "bob", n: 1 },
  { _id: 2, name: "Bob", n: 2 },
  { _id: 3, name: "BOB", n: 3 },
  { _id: 4, name: "Böb", n: 4 },
  { _id: 5, name: "ann", n: 5 },
  { _id: 6, name: "Zoe", n: 6 },
];

describe("a system function's collation", () => {
  it("matches strings as the collation holds them equal, on every store path", async () => {
    await run("seed", people);
    expect(await run("ids", { name: "bob" })).toEqual([int(1)]);
    expect(await run("ids", { name: "bob" }, { collation: caseless })).toEqual([int(1), int(2), int(3)]);
    expect(await run("ids", { name: "bob" }, { collation: baseOnly })).toEqual([int(1), int(2), int(3), int(4)]);
    // The store's own answers (a find without a projection, a count) go the same way.
    expect(await run("findOne", { name: "BOB" }, { collation: caseless })).toEqual({ name: "bob", n: int(1) });
    expect(await run("count", { name: "BOB" }, { collation: caseless })).toEqual(int(3));
    expect(await run("countDocuments", { name: "BOB" })).toEqual(int(1));
    expect(await run("ids", { name: { $in: ["ANN", "zoe"] } }, { collation: caseless })).toEqual([int(5), int(6)]);
    expect(await run("ids", { name: { $ne: "bob" } }, { collation: baseOnly })).toEqual([int(5), int(6)]);
    // Ranges in the collation's order: "ann" < "BOB" < "Zoe" in English, "BOB" < "Zoe" < "ann" by code point.
    const between = { name: { $gt: "a", $lt: "c" } };
    expect(await run("ids", between, { collation: caseless })).toEqual([int(1), int(2), int(3), int(4), int(5)]);
    expect(await run("ids", between)).toEqual([int(1), int(5)]);
    // Inside documents and arrays too; a regular expression is not collated (as in MongoDB).
    expect(await run("ids", { name: { $regex: "^b" } }, { collation: caseless })).toEqual([int(1)]);
  });

  it("sorts by the collation's order, numerically when it says so", async () => {
    await run("seed", [
      { _id: 1, name: "b" },
      { _id: 2, name: "A" },
      { _id: 3, name: "a" },
      { _id: 4, name: "B" },
      { _id: 5, name: "item10" },
      { _id: 6, name: "item9" },
    ]);
    expect(await run("findSorted", {}, {}, { name: 1 })).toEqual(["A", "B", "a", "b", "item10", "item9"]);
    expect(await run("findSorted", {}, { collation: { locale: "en" } }, { name: 1 })).toEqual([
      "a",
      "A",
      "b",
      "B",
      "item10",
      "item9",
    ]);
    expect(
      await run(
        "findSorted",
        {},
        { collation: { locale: "en", caseFirst: "upper", numericOrdering: true } },
        { name: 1 },
      ),
    ).toEqual(["A", "a", "B", "b", "item9", "item10"]);
    // A locale's own rules: German phone books sort "ä" as "ae"; Canadian French weighs accents from the end.
    await run("seed", [
      { _id: 1, name: "Müller" },
      { _id: 2, name: "Mueller" },
      { _id: 3, name: "Muffler" },
    ]);
    expect(await run("findSorted", {}, { collation: { locale: "de" } }, { name: 1 })).toEqual([
      "Mueller",
      "Muffler",
      "Müller",
    ]);
    expect(await run("findSorted", {}, { collation: { locale: "de@collation=phonebook" } }, { name: 1 })).toEqual([
      "Mueller",
      "Müller",
      "Muffler",
    ]);
    await run("seed", [
      { _id: 1, name: "cote" },
      { _id: 2, name: "côte" },
      { _id: 3, name: "coté" },
      { _id: 4, name: "côté" },
    ]);
    expect(await run("findSorted", {}, { collation: { locale: "fr" } }, { name: 1 })).toEqual([
      "cote",
      "coté",
      "côte",
      "côté",
    ]);
    expect(await run("findSorted", {}, { collation: { locale: "fr_CA" } }, { name: 1 })).toEqual([
      "cote",
      "côte",
      "coté",
      "côté",
    ]);
  });

  it("groups, counts distinct values and compares in expressions by the collation", async () => {
    await run("seed", people);
    // The first value of each class is the one answered.
    expect(await run("distinct", "name", {}, { collation: caseless })).toEqual(["ann", "bob", "Böb", "Zoe"]);
    expect(await run("distinct", "name", {}, { collation: baseOnly })).toEqual(["ann", "bob", "Zoe"]);
    const pipeline = [
      { $match: { name: "BOB" } },
      { $group: { _id: "$name", n: { $sum: "$n" }, names: { $addToSet: "$name" } } },
      { $project: { _id: 1, n: 1, names: { $size: "$names" }, same: { $eq: ["$_id", "BOB"] } } },
    ];
    expect(await run("aggregate", pipeline, { collation: caseless })).toEqual([
      { _id: "bob", n: int(6), names: int(1), same: true },
    ]);
    expect(await run("aggregate", pipeline)).toEqual([{ _id: "BOB", n: int(3), names: int(1), same: true }]);
    // In a query worker too (an array of 100,000 is more than the main thread's slice builds).
    const heavy = [
      { $set: { pad: { $size: { $range: [0, 100_000] } } } },
      { $group: { _id: "$name", n: { $sum: 1 } } },
      { $sort: { _id: 1 } },
    ];
    expect(await run("aggregate", heavy, { collation: caseless })).toEqual([
      { _id: "ann", n: int(1) },
      { _id: "bob", n: int(3) },
      { _id: "Böb", n: int(1) },
      { _id: "Zoe", n: int(1) },
    ]);
    // $lookup's join and the set expressions too.
    const joined = [
      { $match: { _id: 5 } },
      { $lookup: { from: "names", localField: "name", foreignField: "name", as: "alike" } },
      { $project: { _id: 0, alike: { $size: "$alike" }, inSet: { $in: ["ANN", ["ann"]] } } },
    ];
    await run("bulkWrite", [{ insertOne: { document: { _id: 7, name: "ANN" } } }]);
    expect(await run("aggregate", joined, { collation: caseless })).toEqual([{ alike: int(2), inSet: true }]);
    expect(await run("aggregate", joined)).toEqual([{ alike: int(1), inSet: false }]);
    // (Not $strcasecmp, $indexOfCP or a regular expression: as in MongoDB.)
    const uncollated = [
      { $match: { _id: 5 } },
      {
        $project: {
          _id: 0,
          strcasecmp: { $strcasecmp: ["100", "2"] },
          indexOfCP: { $indexOfCP: ["ANN", "a"] },
          regex: { $regexMatch: { input: "$name", regex: "^A" } },
        },
      },
    ];
    expect(
      await run("aggregate", uncollated, { collation: { locale: "en", strength: 1, numericOrdering: true } }),
    ).toEqual([{ strcasecmp: int(-1), indexOfCP: int(-1), regex: false }]);
  });

  it("updates and deletes what the collation matches, in bulk operations by each one's own", async () => {
    await run("seed", people);
    expect(await run("updateMany", { name: "BOB" }, { $set: { seen: true } }, { collation: caseless })).toEqual({
      matchedCount: int(3),
      modifiedCount: int(3),
    });
    expect(
      await run(
        "findOneAndUpdate",
        { name: "ANN" },
        { $set: { seen: true } },
        { collation: caseless, returnNewDocument: true },
      ),
    ).toEqual({
      _id: int(5),
      name: "ann",
      n: int(5),
      seen: true,
    });
    expect(await run("count", { seen: true })).toEqual(int(4));
    expect(await run("deleteMany", { name: "böb" }, { collation: baseOnly })).toEqual({ deletedCount: int(4) });
    await run("seed", people);
    expect(
      await run("bulkWrite", [
        { updateMany: { filter: { name: "BOB" }, update: { $set: { seen: true } }, collation: caseless } },
        { deleteOne: { filter: { name: "ZOE" } } },
        { deleteMany: { filter: { name: "ANN" }, collation: caseless } },
      ]),
    ).toEqual({
      insertedCount: int(0),
      matchedCount: int(3),
      modifiedCount: int(3),
      deletedCount: int(1),
      upsertedCount: int(0),
      insertedIds: {},
      upsertedIds: {},
    });
    expect(await run("ids", {})).toEqual([int(1), int(2), int(3), int(4), int(6)]);
    // Update operators compare by it too: only new values are added to a set (the duplicates
    // already there stay), and every element it holds equal is pulled.
    await run("seed", [{ _id: 1, tags: ["foo", "bar", "FOO"] }]);
    await run(
      "updateOne",
      { _id: 1 },
      { $addToSet: { tags: { $each: ["FOO", "BAR", "str"] } } },
      { collation: caseless },
    );
    expect(await run("find", {})).toEqual([{ tags: ["foo", "bar", "FOO", "str"] }]);
    await run("updateOne", { _id: 1 }, { $pull: { tags: "Foo" }, $max: { top: "B" } }, { collation: caseless });
    await run("updateOne", { _id: 1 }, { $max: { top: "a" } }, { collation: { locale: "en" } });
    expect(await run("find", {})).toEqual([{ tags: ["bar", "str"], top: "B" }]);
    // A positional projection finds the element the collated filter matched.
    expect(
      await run(
        "findOneAndUpdate",
        { tags: "STR" },
        { $set: { seen: true } },
        { collation: caseless, projection: { _id: 0, "tags.$": 1 } },
      ),
    ).toEqual({ tags: ["str"] });
  });

  it("narrows the read by the conditions it cannot change, where the store can", async () => {
    // An app whose actions may examine 50 documents; 10 of 200 are asked for by their ids, which
    // both stores find through an index (PostgreSQL's primary key; the memory store's of numbers),
    // so the collated query reads those 10.
    const narrow = await newApp(app, {
      queryDocsExaminedLimit: 50,
      functions: { system: { source: operations, runAsSystem: true } },
      rules: { "shop.names": { read: true, write: true, insert: true, delete: true } },
    });
    const narrowToken = (await anonymousLogin(app, narrow)).access_token;
    const inNarrow = (kind: string, ...args: unknown[]) =>
      functionResult(app, narrow, narrowToken, "system", [kind, ...args]);
    await inNarrow(
      "seed",
      Array.from({ length: 200 }, (_, i) => ({ _id: i, name: i % 2 === 0 ? "bob" : "Bob" })),
    );
    const ids = { $in: Array.from({ length: 10 }, (_, i) => i * 20) };
    const examined = { error: "operation exceeded the limit of 50 documents examined" };
    expect(await inNarrow("count", { _id: ids, name: "BOB" }, { collation: caseless })).toEqual(int(10));
    expect(await inNarrow("count", { _id: ids, name: { $regex: "b" } })).toEqual(int(10));
    // A query whose every condition holds a string reads the whole collection under a collation.
    expect(await inNarrow("count", { name: "BOB" }, { collation: caseless })).toEqual(examined);
  });

  it("takes locale simple as none, and refuses it to user functions", async () => {
    await run("seed", people);
    expect(await run("ids", { name: "bob" }, { collation: { locale: "simple" } })).toEqual([int(1)]);
    expect(await asUser("ids", { name: "bob" }, { collation: caseless })).toEqual({
      error: "collation is not allowed in this context",
    });
    expect(await asUser("ids", { name: "bob" })).toEqual([int(1)]);
  });
});

describe("a collation spec", () => {
  /** What a find under `collation` answers (an error's message, or the documents' ids). */
  const refusal = async (collation: unknown) =>
    ((await run("ids", { name: "bob" }, { collation })) as { error?: string }).error;

  it("is refused as MongoDB's parser refuses it, field by field", async () => {
    await run("seed", people);
    expect(await refusal({ strength: 2 })).toBe("BSON field 'collation.locale' is missing but a required field");
    expect(await refusal({ locale: "en", colour: 1 })).toBe("BSON field 'collation.colour' is an unknown field.");
    expect(await refusal({ locale: 3 })).toBe(
      "BSON field 'collation.locale' is the wrong type 'int', expected type 'string'",
    );
    expect(await refusal({ locale: "en", caseLevel: 1 })).toBe(
      "BSON field 'collation.caseLevel' is the wrong type 'int', expected type 'bool'",
    );
    expect(await refusal({ locale: "en", strength: "2" })).toBe(
      "BSON field 'collation.strength' is the wrong type 'string', expected types '[long, int, decimal, double]'",
    );
    expect(await refusal({ locale: "en", strength: 6 })).toBe(
      "BSON field 'collation.strength' value must be <= 5, actual value '6'",
    );
    expect(await refusal({ locale: "en", strength: 0 })).toBe(
      "Enumeration value '0' for field 'collation.strength' is not a valid value.",
    );
    expect(await refusal({ locale: "en", caseFirst: "first" })).toBe(
      "Enumeration value 'first' for field 'collation.caseFirst' is not a valid value.",
    );
    expect(await refusal({ locale: "en", backwards: null })).toBe(
      "Field 'backwards' should be a boolean value, but found: null",
    );
    // A strength of 2.5 is 2 (MongoDB truncates), and null leaves a field at its default.
    expect(await run("ids", { name: "bob" }, { collation: { locale: "en", strength: 2.5, caseLevel: null } })).toEqual([
      int(1),
      int(2),
      int(3),
    ]);
  });

  it("takes ICU's locales by their exact names only, and refuses what this server cannot apply", async () => {
    await run("seed", people);
    expect(await refusal({ locale: "xx" })).toBe(`Field 'locale' is invalid in: { locale: "xx" }`);
    expect(await refusal({ locale: "en_XX" })).toBe(
      `Field 'locale' is invalid in: { locale: "en_XX" }. Did you mean 'en'?`,
    );
    expect(await refusal({ locale: "en-US" })).toBe(`Field 'locale' is invalid in: { locale: "en-US" }`);
    expect(await refusal({ locale: "en_US@collation=phonebook" })).toBe(
      `Field 'locale' is invalid in: { locale: "en_US@collation=phonebook" }. Did you mean 'en_US'?`,
    );
    expect(await refusal({ locale: "" })).toBe(`Field 'locale' cannot be the empty string in: { locale: "" }`);
    // Taken (POSIX's order tells case apart at every strength; a phone book reads "ö" as "oe").
    const bobs = (collation: unknown) => run("ids", { name: "BOB" }, { collation });
    const all = [int(1), int(2), int(3), int(4)];
    expect(await bobs({ locale: "en_US", strength: 1 })).toEqual(all);
    expect(await bobs({ locale: "en_US_POSIX", strength: 1 })).toEqual([int(3)]);
    expect(await bobs({ locale: "zh_Hant", strength: 1 })).toEqual(all);
    expect(await bobs({ locale: "sr_Latn", strength: 1 })).toEqual(all);
    expect(await bobs({ locale: "de_AT@collation=phonebook", strength: 1 })).toEqual([int(1), int(2), int(3)]);
    expect(await bobs({ locale: "es@collation=traditional", strength: 1 })).toEqual(all);
    expect(await refusal({ locale: "en", version: "58.2" })).toBe(
      `Requested collation version 58.2 but the only available collator version was 57.1. Requested collation spec: { locale: "en", version: "58.2" }`,
    );
    expect(await run("ids", { name: "bob" }, { collation: { locale: "en", version: "57.1" } })).toEqual([int(1)]);
    // The options' combinations, with the locale's defaults (French Canadian orders accents backwards).
    expect(await refusal({ locale: "fr_CA", strength: 1 })).toBe(
      `'backwards' is invalid with 'strength' of 1 in: { locale: "fr_CA", strength: 1 }`,
    );
    expect(await refusal({ locale: "en", strength: 2, caseFirst: "upper" })).toBe(
      `'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: { locale: "en", strength: 2, caseFirst: "upper" }`,
    );
    // Locale simple is code points, whatever else it says.
    expect(await run("ids", { name: "bob" }, { collation: { locale: "simple", strength: 1 } })).toEqual([int(1)]);
    expect(await refusal({ locale: "en", backwards: true })).toBe(
      "the collation option 'backwards: true' (locale 'en' orders accents forwards) is not supported by this server",
    );
    expect(await refusal({ locale: "en", alternate: "shifted", maxVariable: "space" })).toBe(
      `the collation option 'maxVariable: "space"' is not supported by this server`,
    );
    expect(await refusal({ locale: "en", strength: 2, caseLevel: true })).toBe(
      "the collation option 'caseLevel: true' above strength 1 is not supported by this server",
    );
    // The option itself: an object (an empty one is none).
    expect(await refusal("en")).toBe("Expected field collationto be of type object");
    expect(await run("count", { name: "bob" }, { collation: "en" })).toEqual({
      error: "BSON field 'count.collation' is the wrong type 'string', expected type 'object'",
    });
    expect(await run("ids", { name: "bob" }, { collation: {} })).toEqual([int(1)]);
  });
});

describe("the engine under a collation", () => {
  const under = <T>(spec: Parameters<typeof withCollation>[0], fn: () => T) =>
    withQueryLimits({ timeoutMs: 10_000, memoryLimitBytes: 100 * 1024 * 1024 }, () => withCollation(spec, fn));

  it("keeps one class per value among thousands, whatever order they come in", () => {
    // 2,000 names in 500 classes of four spellings each, shuffled: more than a bucket holds.
    const docs: { name: string; order: number }[] = [];
    for (let i = 0; i < 500; i++) {
      const name = `name${String(i).padStart(3, "0")}`;
      for (const spelling of [name, name.toUpperCase(), `N${name.slice(1)}`, `n${name.slice(1).toUpperCase()}`])
        docs.push({ name: spelling, order: (i * 7919 + docs.length * 104_729) % 2_003 });
    }
    docs.sort((a, b) => a.order - b.order);
    const groups = under({ locale: "en", strength: 2 }, () =>
      aggregate(docs, [{ $group: { _id: "$name", n: { $sum: 1 } } }]),
    ) as { _id: string; n: number }[];
    expect(groups).toHaveLength(500);
    expect(groups.every((group) => group.n === 4)).toBe(true);
    expect(under(undefined, () => aggregate(docs, [{ $group: { _id: "$name" } }]))).toHaveLength(2_000);
  });

  it("compares field names and code points as before", () => {
    const docs = [{ a: { B: 1 } }, { a: { b: 1 } }];
    expect(under({ locale: "en", strength: 1 }, () => find(docs, { a: { b: 1 } }))).toEqual([{ a: { b: 1 } }]);
    expect(under({ locale: "en", strength: 5 }, () => find([{ s: "a" }, { s: "A" }], { s: "a" }))).toEqual([
      { s: "a" },
    ]);
    expect(
      under({ locale: "en", strength: 1, alternate: "shifted" }, () =>
        find([{ s: "a-b" }, { s: "ab" }, { s: "a b" }], { s: "ab" }),
      ),
    ).toHaveLength(3);
  });
});
