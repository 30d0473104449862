/**
 * A find's query-level operators and projection operators as MongoDB takes them (query-engine.ts):
 * `$comment` matches everything, `$and`/`$or`/`$nor` need a non-empty list of documents, `$text`
 * needs a text index (none exists here), `$jsonSchema` selects the documents that satisfy a
 * schema, and `$elemMatch`/`$slice` projections are checked and leave out what they did not find.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { find } from "../../src/data/query-engine.ts";

const docs = [
  { _id: 1, arr: [1, 2, 3, 4, 5], items: [{ k: "a" }, { k: "b", n: 2 }, { k: "b", n: 3 }], s: "hello", age: 30 },
  { _id: 2, arr: [], items: [], s: "World", age: "thirty" },
];

function run(query: unknown, projection?: unknown): unknown {
  try {
    const options = projection === undefined ? {} : { projection: fromEJSON(projection) as Document };
    return toEJSON(find(fromEJSON(docs) as Document[], fromEJSON(query) as Document, options));
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const ids = (...values: number[]) => values.map((v) => ({ _id: { $numberInt: String(v) } }));

describe("query-level operators", () => {
  it("$comment is a note and matches everything", () => {
    expect(run({ $comment: "why", _id: 1 }, { _id: 1 })).toEqual(ids(1));
  });

  it("$and, $or and $nor take a non-empty list of documents", () => {
    expect(run({ $and: [] })).toBe("ERR $and/$or/$nor must be a nonempty array");
    expect(run({ $or: {} })).toBe("ERR $or must be an array");
    expect(run({ $nor: [5] })).toBe("ERR $or/$and/$nor entries need to be full objects");
    expect(run({ $nor: [{ _id: 1 }] }, { _id: 1 })).toEqual(ids(2));
  });

  it("$text needs a text index, which no collection has here", () => {
    expect(run({ $text: { $search: "hello" } })).toBe("ERR text index required for $text query");
  });

  it("$jsonSchema selects the documents that satisfy the schema", () => {
    expect(run({ $jsonSchema: { required: ["age"], properties: { age: { bsonType: "int" } } } }, { _id: 1 })).toEqual(
      ids(1),
    );
    expect(run({ $jsonSchema: { properties: { s: { bsonType: "string", pattern: "^[A-Z]" } } } }, { _id: 1 })).toEqual(
      ids(2),
    );
    expect(run({ $jsonSchema: { bsonType: "nope" } })).toBe("ERR Unknown type name alias: nope");
    expect(run({ $jsonSchema: { colour: "red" } })).toBe("ERR Unknown $jsonSchema keyword: colour");
  });
});

describe("projection operators", () => {
  it("$elemMatch leaves the field out where no element matches, and takes no nested field", () => {
    expect(run({}, { items: { $elemMatch: { k: "b" } } })).toEqual([
      { _id: { $numberInt: "1" }, items: [{ k: "b", n: { $numberInt: "2" } }] },
      { _id: { $numberInt: "2" } },
    ]);
    expect(run({}, { "items.k": { $elemMatch: { k: "b" } } })).toBe(
      "ERR Cannot use $elemMatch projection on a nested field.",
    );
    // (MongoDB writes the type's number: 16, an int.)
    expect(run({}, { items: { $elemMatch: 5 } })).toBe("ERR elemMatch: Invalid argument, object required, but got 16");
  });

  it("a projection's paths and kinds are checked as MongoDB's parser checks them, found or not", () => {
    for (const query of [{}, { _id: 99 }]) {
      expect(run(query, { items: 1, "items.k": 1 })).toBe("ERR Path collision at items.k remaining portion k");
      expect(run(query, { "items.k": 1, items: 1 })).toBe("ERR Path collision at items");
      expect(run(query, { s: 1, age: 0 })).toBe("ERR Cannot do exclusion on field age in inclusion projection");
      expect(run(query, { s: 0, age: { $add: [1, 2] } })).toBe(
        "ERR Cannot use expression other than $meta in exclusion projection",
      );
      expect(run(query, { s: { $nope: 1 } })).toBe("ERR Unknown expression $nope");
    }
    // find()'s own: $elemMatch, $slice and a positional projection are leaves of their paths.
    expect(run({}, { items: { $elemMatch: { k: "b" } }, "items.k": 1 })).toBe(
      "ERR Path collision at items.k remaining portion k",
    );
    expect(run({ _id: 2 }, { s: 1, age: { $literal: "x" } })).toEqual([
      { _id: { $numberInt: "2" }, s: "World", age: "x" },
    ]);
    // `_id` kept in an exclusion is no inclusion (an exclusion keeps it anyway).
    expect(run({ _id: 2 }, { _id: 1, s: 0, items: 0, arr: 0 })).toEqual([{ _id: { $numberInt: "2" }, age: "thirty" }]);
  });

  it("$slice takes a count or a [skip, limit] pair; anything else is the aggregation expression", () => {
    expect(run({ _id: 1 }, { arr: { $slice: [1, 2] }, _id: 0, items: 0, s: 0, age: 0 })).toEqual([
      { arr: [{ $numberInt: "2" }, { $numberInt: "3" }] },
    ]);
    // No find() $slice, so the expression: $slice of 1, which is no array.
    expect(run({}, { arr: { $slice: [1, 0] } })).toBe(
      "ERR First argument to $slice must be an array, but is of type: int",
    );
    expect(run({ _id: 1 }, { part: { $slice: ["$arr", 1, 2] } })).toEqual([
      { _id: { $numberInt: "1" }, part: [{ $numberInt: "2" }, { $numberInt: "3" }] },
    ]);
    expect(run({}, { arr: { $slice: "2" } })).toBe(
      'ERR Invalid $slice syntax. The given syntax { $slice: "2" } did not match the find() syntax because :: ' +
        "Location31273: $slice only supports numbers and [skip, limit] arrays :: The given syntax did not match " +
        "the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, " +
        "but 1 were passed in.",
    );
  });
});

describe("comparisons with NaN", () => {
  // (nan.js: NaN equals NaN and otherwise compares false; the query's own NaN matches only NaN.)
  const values = fromEJSON([
    { _id: 1, a: { $numberDouble: "NaN" } },
    { _id: 2, a: { $numberDecimal: "NaN" } },
    { _id: 3, a: { $numberDouble: "-Infinity" } },
    { _id: 4, a: 0 },
    { _id: 5, a: [{ $numberDouble: "NaN" }, 1] },
  ]) as Document[];
  const matched = (query: unknown) => find(values, fromEJSON(query) as Document).map((doc) => doc._id);

  it("matches no NaN by a comparison with a number", () => {
    expect(matched({ a: { $lt: 1 } })).toEqual([3, 4]);
    expect(matched({ a: { $lte: 0 } })).toEqual([3, 4]);
    expect(matched({ a: { $lt: { $numberDouble: "Infinity" } } })).toEqual([3, 4, 5]);
    expect(matched({ a: { $gt: { $numberDouble: "-Infinity" } } })).toEqual([4, 5]);
  });

  it("matches NaN of either type by equality with NaN, and nothing by an order with it", () => {
    const nan = { $numberDouble: "NaN" };
    expect(matched({ a: nan })).toEqual([1, 2, 5]);
    expect(matched({ a: { $gte: nan } })).toEqual([1, 2, 5]);
    expect(matched({ a: { $lt: nan } })).toEqual([]);
    expect(matched({ a: { $gt: nan } })).toEqual([]);
    expect(matched({ a: { $in: [{ $numberDecimal: "NaN" }] } })).toEqual([1, 2, 5]);
  });
});

describe("$all", () => {
  it("refuses query operators among its values, and $elemMatch mixed with anything else, in MongoDB's words", () => {
    expect(run({ arr: { $all: [{ $gt: 1 }] } })).toBe("ERR no $ expressions in $all");
    expect(run({ arr: { $all: [1, { $in: [2] }] } })).toBe("ERR no $ expressions in $all");
    expect(run({ items: { $all: [{ $elemMatch: { k: "a" } }, { k: "b" }] } })).toBe(
      "ERR $all/$elemMatch has to be consistent",
    );
    expect(run({ items: { $all: [{ $elemMatch: { k: "a" } }, 2] } })).toBe("ERR $all/$elemMatch has to be consistent");
  });

  it("takes values, documents, regular expressions and a list of $elemMatch", () => {
    expect(run({ arr: { $all: [2, 3] } }, { _id: 1 })).toEqual(ids(1));
    expect(run({ items: { $all: [{ k: "a" }] } }, { _id: 1 })).toEqual(ids(1));
    expect(run({ items: { $all: [{ $elemMatch: { k: "a" } }, { $elemMatch: { n: 3 } }] } }, { _id: 1 })).toEqual(
      ids(1),
    );
    // (A `$` name that is no query operator makes a document to compare with.)
    expect(run({ items: { $all: [{ $k: "a" }] } }, { _id: 1 })).toEqual([]);
    expect(run({ arr: { $all: [] } }, { _id: 1 })).toEqual([]);
  });
});
