/**
 * Update operators as MongoDB's server applies them (updater.ts, update-paths.ts): positional
 * paths (`$`, `$[]`, `$[id]` with array filters), paths through values that hold no fields, the
 * order new fields take, and each operator's refusals — as an update decides them over the
 * documents it read (decideUpdate, what every request and function runs).
 */
import { Decimal128, Long } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { decideUpdate } from "../../src/data/query-jobs.ts";
import { defaultQueryLimits, withQueryLimits } from "../../src/data/query-limits.ts";
import { checkUpdateOperators, updateOperatorChecks } from "../../src/data/updater.ts";

const stored = (value: unknown) => {
  const doc = fromEJSON(value) as Document;
  freezeTree(doc);
  return doc;
};

interface Options {
  query?: Document;
  arrayFilters?: Document[];
  upsert?: boolean;
}

/** The document after `update`, and the paths it changed; or the refusal's message. */
function update(doc: Document, spec: Document, { query = {}, arrayFilters, upsert = false }: Options = {}) {
  checkUpdateOperators(spec, arrayFilters);
  const decision = decideUpdate(
    {
      kind: "update",
      all: query,
      query,
      spec,
      writeFilter: {},
      insertFilter: {},
      ...(arrayFilters ? { arrayFilters } : {}),
      options: { many: false, upsert, replace: false },
    },
    upsert ? [] : [stored(doc)],
  );
  if (decision.kind === "upsert") return { doc: toEJSON(decision.doc) as Document, paths: ["*"] };
  const [change] = decision.changes;
  return { doc: toEJSON(change!.after) as Document, paths: change!.paths };
}

const refusal = (doc: Document, spec: Document, options?: Options) => {
  try {
    update(doc, spec, options);
  } catch (error) {
    return (error as Error).message;
  }
  return "no error";
};

const order = {
  _id: 1,
  items: [
    { sku: "a", qty: 1 },
    { sku: "b", qty: 2 },
  ],
  grades: [80, 85, 90],
};
const plain = (value: unknown) =>
  JSON.parse(JSON.stringify(value), (_k, v) => (v?.$numberInt ? Number(v.$numberInt) : v));

describe("the positional $", () => {
  it("stands for the element of the array the query matched", () => {
    const byField = update(order, { $set: { "items.$.qty": 5 } }, { query: { "items.sku": "b" } });
    expect(plain(byField.doc).items).toEqual([
      { sku: "a", qty: 1 },
      { sku: "b", qty: 5 },
    ]);
    expect(byField.paths).toEqual(["items.1.qty"]);
    expect(plain(update(order, { $inc: { "grades.$": -3 } }, { query: { grades: { $gte: 85 } } }).doc).grades).toEqual([
      80, 82, 90,
    ]);
    const byElemMatch = update(
      order,
      { $set: { "items.$.qty": 7 } },
      { query: { items: { $elemMatch: { sku: "b", qty: 2 } } } },
    );
    expect(plain(byElemMatch.doc).items[1]).toEqual({ sku: "b", qty: 7 });
    const inAnd = update(
      order,
      { $unset: { "items.$.qty": "" } },
      { query: { $and: [{ _id: 1 }, { "items.sku": "a" }] } },
    );
    expect(plain(inAnd.doc).items).toEqual([{ sku: "a" }, { sku: "b", qty: 2 }]);
    // An $or MongoDB's optimizer rewrites before matching: one branch is that branch, equalities
    // on one path an $in (whose first matching element records).
    const oneBranch = update(order, { $set: { "items.$.qty": 5 } }, { query: { $or: [{ "items.sku": "b" }] } });
    expect(oneBranch.paths).toEqual(["items.1.qty"]);
    const asIn = update(order, { $set: { "grades.$": 0 } }, { query: { $or: [{ grades: 90 }, { grades: 85 }] } });
    expect(plain(asIn.doc).grades).toEqual([80, 0, 90]);
  });

  it("applies every operator at the matched element, Decimal128 arithmetic and $push modifiers included", () => {
    const prices = { _id: 2, lines: [{ sku: "a", price: { $numberDecimal: "1.50" } }] };
    const raised = update(
      prices,
      { $inc: { "lines.$.price": Decimal128.fromString("0.25") } },
      { query: { "lines.sku": "a" } },
    );
    expect(raised.doc).toMatchObject({ lines: [{ price: { $numberDecimal: "1.75" } }] });
    const pushed = update(
      order,
      { $push: { "items.$.tags": { $each: ["z", "a"], $sort: 1 } } },
      { query: { "items.sku": "a" } },
    );
    expect(plain(pushed.doc).items[0]).toEqual({ sku: "a", qty: 1, tags: ["a", "z"] });
  });

  it("is refused when the query matched no array element, or names none ($or, $ne record none)", () => {
    const message = "The positional operator did not find the match needed from the query.";
    expect(refusal(order, { $set: { "items.$.qty": 5 } }, { query: { _id: 1 } })).toBe(message);
    const twoPaths = { $or: [{ "items.sku": "b" }, { grades: 80 }] };
    expect(refusal(order, { $set: { "items.$.qty": 5 } }, { query: twoPaths })).toBe(message);
    expect(refusal(order, { $set: { "items.$.qty": 5 } }, { query: { "items.sku": { $ne: "z" } } })).toBe(message);
    expect(refusal({}, { $set: { "items.$.qty": 5 } }, { query: { "items.sku": "z" }, upsert: true })).toBe(message);
  });
});

describe("$[] and $[<identifier>]", () => {
  it("update every element, or those the array filter matches, with MongoDB's arithmetic", () => {
    const all = update(
      { _id: 3, items: [{ qty: { $numberDecimal: "1.5" } }, { qty: 2 }] },
      { $inc: { "items.$[].qty": 1 } },
    );
    expect(all.doc).toMatchObject({ items: [{ qty: { $numberDecimal: "2.5" } }, { qty: { $numberInt: "3" } }] });
    expect(all.paths).toEqual(["items.0.qty", "items.1.qty"]);
    const some = update(order, { $set: { "items.$[big].flag": true } }, { arrayFilters: [{ "big.qty": { $gt: 1 } }] });
    expect(plain(some.doc).items).toEqual([
      { sku: "a", qty: 1 },
      { sku: "b", qty: 2, flag: true },
    ]);
    const nested = update({ _id: 5, m: [[1, 2], [3]] }, { $inc: { "m.$[].$[]": 1 } });
    expect(plain(nested.doc).m).toEqual([[2, 3], [4]]);
    const scalars = update(order, { $mul: { "grades.$[g]": 2 } }, { arrayFilters: [{ g: { $lt: 85 } }] });
    expect(plain(scalars.doc).grades).toEqual([160, 85, 90]);
    const none = update(order, { $set: { "items.$[x].qty": 0 } }, { arrayFilters: [{ "x.sku": "none" }] });
    expect(none.paths).toEqual([]);
  });

  it("refuse a field that holds no number, a missing array and a value that is no array", () => {
    expect(refusal({ _id: 3, items: [{ qty: "x" }] }, { $inc: { "items.$[].qty": 1 } })).toMatch(
      /^Cannot apply \$inc to a value of non-numeric type\. .* has the field 'qty' of non-numeric type string$/,
    );
    expect(refusal({ _id: 3 }, { $set: { "items.$[].qty": 1 } })).toBe(
      "The path 'items' must exist in the document in order to apply array updates.",
    );
    expect(refusal({ _id: 3, items: 5 }, { $set: { "items.$[].qty": 1 } })).toBe(
      "Cannot apply array updates to non-array element items: 5",
    );
  });

  it("$max, $addToSet and $pull through them compare in MongoDB's order and equality", () => {
    const max = update({ _id: 3, items: [{ q: { $numberDecimal: "10" } }] }, { $max: { "items.$[].q": 9.5 } });
    expect(max.paths).toEqual([]);
    const added = update(
      { _id: 4, items: [{ t: [5] }] },
      { $addToSet: { "items.$[].t": Decimal128.fromString("5.0") } },
    );
    expect(added.paths).toEqual([]);
    const pulled = update({ _id: 6, items: [{ t: [1, 2, 3] }] }, { $pull: { "items.$[].t": { $gte: 2 } } });
    expect(plain(pulled.doc).items).toEqual([{ t: [1] }]);
  });

  it("checks array filters as MongoDB does, before anything matches", () => {
    const cases: [Document, Document[] | undefined, string][] = [
      [
        { $set: { "items.$[e].qty": 1 } },
        undefined,
        "No array filter found for identifier 'e' in path 'items.$[e].qty'",
      ],
      [
        { $set: { "items.$[].qty": 1 } },
        [{ "e.qty": 1 }],
        "The array filter for identifier 'e' was not used in the update",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ "e.qty": 1 }, { e: 2 }],
        "Found multiple array filters with the same top-level field name e",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ "e.qty": 1, "f.qty": 2 }],
        "Expected a single top-level field name, found 'e' and 'f'",
      ],
      // (Names in the order they stand, a list's members where the list stands.)
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ $or: [{ "f.qty": 1 }, { $and: [{ "g.qty": 1 }] }], "e.qty": 2 }],
        "Expected a single top-level field name, found 'f' and 'g'",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ $or: [{ "f.qty": 1 }], "e.qty": 2 }],
        "Expected a single top-level field name, found 'f' and 'e'",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ "e.qty": 2, $nor: [{ "f.qty": 1 }] }],
        "Expected a single top-level field name, found 'e' and 'f'",
      ],
      [
        { $set: { "items.$[E].qty": 1 } },
        [{ "E.qty": 1 }],
        "must be an alphanumeric string beginning with a lowercase letter, found 'E'",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{}],
        "Cannot use an expression without a top-level field name in arrayFilters",
      ],
      [
        { $set: { "items.$.a.$.b": 1 } },
        undefined,
        "Too many positional (i.e. '$') elements found in path 'items.$.a.$.b'",
      ],
      [
        { $set: { "items.$[e].qty": 1 } },
        [{ $expr: { $eq: ["$e", 1] } }],
        "Error parsing array filter :: caused by :: $expr is not allowed in this context",
      ],
      [
        { $set: { "$[e]": 1 } },
        [{ e: 1 }],
        "Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '$[e]'",
      ],
    ];
    for (const [spec, arrayFilters, message] of cases)
      expect(() => checkUpdateOperators(spec, arrayFilters), JSON.stringify(spec)).toThrow(message);
  });

  it("reads many array filters, and a wide one, in turns (the main thread checks them)", () => {
    /** How often the checks pause, and what they end with. */
    const turns = (spec: Document, arrayFilters: Document[]) => {
      const steps = updateOperatorChecks(spec, arrayFilters);
      let paused = 0;
      for (;;) {
        try {
          if (steps.next().done) return { paused, outcome: "passed" };
        } catch (error) {
          return { paused, outcome: (error as Error).message };
        }
        paused++;
      }
    };
    // 100,000 filters (one used): held ~76 ms at once. Each identifier's filter read, then refused.
    const many = Array.from({ length: 100_000 }, (_, i) => ({ [`e${i}`]: { $gte: i } }));
    const refused = turns({ $set: { "a.$[e0]": 5 } }, many);
    expect(refused.outcome).toContain("The array filter for identifier 'e1' was not used in the update");
    expect(refused.paused).toBeGreaterThanOrEqual(100_000 / 1_024);
    // 500 filters of 1,000 values each: the pauses count the values, whichever filter holds them.
    const list = Array.from({ length: 1_000 }, (_, k) => k);
    const heavy = turns(
      { $set: { "a.$[e0]": 5 } },
      Array.from({ length: 500 }, (_, i) => ({ [`e${i}`]: { $in: list } })),
    );
    expect(heavy.outcome).toContain("The array filter for identifier 'e1' was not used in the update");
    expect(heavy.paused).toBeGreaterThanOrEqual(500_000 / 1_024);
    // One filter of 100,000 conditions on its identifier, walked for banned features and its name.
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`e.k${i}`, { $ne: i }]));
    const used = turns({ $set: { "a.$[e]": 5 } }, [wide]);
    expect(used).toEqual({ paused: expect.any(Number), outcome: "passed" });
    expect(used.paused).toBeGreaterThanOrEqual(100_000 / 1_024);
    // What a turn ends with is what the checks at once end with: a banned feature deep in a wide one.
    const banned = { ...wide, "e.last": { $elemMatch: { $expr: { $eq: ["$x", 1] } } } };
    expect(turns({ $set: { "a.$[e]": 5 } }, [banned]).outcome).toBe(
      "Error parsing array filter :: caused by :: $expr is not allowed in this context",
    );
  });

  it("refuses two array filters that change one path of one element", () => {
    expect(
      refusal(
        order,
        { $set: { "grades.$[a]": 1, "grades.$[b]": 2 } },
        { arrayFilters: [{ a: 85 }, { b: { $gt: 80 } }] },
      ),
    ).toBe("Update created a conflict at 'grades.1'");
  });
});

describe("paths through values", () => {
  it("refuses to create a field inside a value that holds none (the document unchanged)", () => {
    expect(refusal({ _id: 7, a: 5 }, { $set: { "a.b": 1 } })).toBe("Cannot create field 'b' in element {a: 5}");
    expect(refusal({ _id: 7, items: [{ q: 1 }] }, { $inc: { "items.q": 1 } })).toBe(
      "Cannot create field 'q' in element {items: [ { q: 1 } ]}",
    );
    expect(refusal({ _id: 7, items: [1, { q: 1 }] }, { $set: { "items.0.q": 2 } })).toBe(
      "Cannot create field 'q' in element {0: 1}",
    );
  });

  it("pads arrays with nulls, within MongoDB's bound", () => {
    expect(plain(update({ _id: 7, items: [1, 2] }, { $set: { "items.4": 9 } }).doc).items).toEqual([
      1,
      2,
      null,
      null,
      9,
    ]);
    expect(refusal({ _id: 7, items: [] }, { $set: { "items.99999999": 1 } })).toMatch(/backfill/);
  });

  it("creates new fields in the order of their names, whatever the operators' order", () => {
    const { doc } = update({ _id: 1 }, { $set: { z: 1, "m.y": 1 }, $inc: { a: 1, "m.b": 2 }, $min: { k: 3 } });
    expect(Object.keys(doc)).toEqual(["_id", "a", "k", "m", "z"]);
    expect(Object.keys(doc.m as Document)).toEqual(["b", "y"]);
  });

  it("orders names of digits by number, any other by code point", () => {
    const { doc } = update({ _id: 1, m: {} }, { $set: { "m.10": 1, "m.9": 1, "m.b": 1, "m.B": 1, "m.09": 1 } });
    expect(Object.keys(doc.m as Document)).toEqual(["9", "10", "09", "B", "b"]);
  });

  it("refuses to create a top-level field named with a $, allows one deeper", () => {
    expect(refusal({ _id: 1 }, { $set: { $x: 1 } })).toMatch(
      /^The dollar \(\$\) prefixed field '\$x' in '\$x' is not allowed/,
    );
    expect(update({ _id: 1 }, { $set: { "a.$x": 1 } }).doc).toEqual({
      _id: { $numberInt: "1" },
      a: { $x: { $numberInt: "1" } },
    });
  });

  it("refuses an $inc past 64 bits of a Long, as MongoDB does", () => {
    expect(refusal({ _id: 1, n: { $numberLong: "9223372036854775807" } }, { $inc: { n: 1 } })).toBe(
      "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}",
    );
  });

  it("refuses empty field names", () => {
    expect(() => checkUpdateOperators({ $set: { "a..b": 1 } })).toThrow(
      "The update path 'a..b' contains an empty field name, which is not allowed.",
    );
    expect(() => checkUpdateOperators({ $set: { "": 1 } })).toThrow("An empty update path is not valid.");
  });

  it("a $set of the same value changes nothing; of another type of the same number, it does", () => {
    expect(update({ _id: 1, a: { b: [1, "x"] } }, { $set: { a: { b: [1, "x"] } } }).paths).toEqual([]);
    expect(update({ _id: 1, a: 1 }, { $set: { a: Long.fromNumber(2 ** 60) } }).paths).toEqual(["a"]);
    expect(update({ _id: 1, a: { x: 1, y: 2 } }, { $set: { a: { y: 2, x: 1 } } }).paths).toEqual(["a"]);
  });
});

describe("each operator's refusals", () => {
  it("$rename: never through an array, and the value is kept when refused", () => {
    expect(refusal({ _id: 7, a: 1, items: [{ q: 1 }] }, { $rename: { a: "items.x" } })).toBe(
      "The destination field cannot be an array element, 'items.x' in doc with _id: 7 has an array field called 'items'",
    );
    expect(refusal({ _id: 7, items: [{ q: 1 }] }, { $rename: { "items.0.q": "q" } })).toBe(
      "The source field cannot be an array element, 'items.0.q' in doc with _id: 7 has an array field called 'items'",
    );
    expect(refusal({ _id: 7, a: 1 }, { $rename: { "a.b": "c" } })).toBe(
      "cannot use the part (a of a.b) to traverse the element ({a: 1})",
    );
    const renamed = update({ _id: 7, a: 1, b: { c: 2 } }, { $rename: { a: "b.d", "b.c": "e" } });
    expect(plain(renamed.doc)).toEqual({ _id: 7, b: { d: 1 }, e: 2 });
    expect(update({ _id: 7 }, { $rename: { a: "b" } }).paths).toEqual([]);
  });

  it("$pop, $pull and $pullAll refuse a field that holds no array", () => {
    expect(refusal({ _id: 7, items: 5 }, { $pop: { items: 1 } })).toBe(
      "Path 'items' contains an element of non-array type 'int'",
    );
    expect(refusal({ _id: 7, items: 5 }, { $pull: { items: 5 } })).toBe("Cannot apply $pull to a non-array value");
    expect(refusal({ _id: 7, items: "x" }, { $pullAll: { items: [5] } })).toBe(
      "Cannot apply $pull to a non-array value",
    );
    expect(plain(update({ _id: 7, items: [1, 2, 3] }, { $pop: { items: -1 } }).doc).items).toEqual([2, 3]);
    expect(update({ _id: 7 }, { $pull: { "a.b": 1 } }).paths).toEqual([]);
    expect(refusal({ _id: 7, a: 5 }, { $pop: { "a.b": 1 } })).toBe(
      "Cannot use the part (b) of (a.b) to traverse the element ({a: 5})",
    );
  });

  it("$pull takes a document as a query over the elements, $or and $and included", () => {
    const doc = {
      _id: 1,
      results: [{ item: "A", score: 5 }, { item: "B", score: 8, extra: 1 }, { item: "C", score: 9 }, 7],
    };
    const pulled = update(doc, { $pull: { results: { $or: [{ item: "A" }, { score: 9 }] } } });
    expect(plain(pulled.doc).results).toEqual([{ item: "B", score: 8, extra: 1 }, 7]);
    const byFields = update(doc, { $pull: { results: { item: "B" } } });
    expect(plain(byFields.doc).results).toEqual([{ item: "A", score: 5 }, { item: "C", score: 9 }, 7]);
    expect(plain(update({ _id: 1, a: [[1, 2], [1]] }, { $pull: { a: [1, 2] } }).doc).a).toEqual([[1]]);
  });

  it("$push counts a sort as a change, an empty $each without one as none", () => {
    expect(update({ _id: 1, a: [1, 2] }, { $push: { a: { $each: [], $sort: 1 } } }).paths).toEqual(["a"]);
    expect(update({ _id: 1, a: [1, 2] }, { $push: { a: { $each: [] } } }).paths).toEqual([]);
    expect(plain(update({ _id: 1 }, { $push: { a: { $each: [] } } }).doc).a).toEqual([]);
    expect(plain(update({ _id: 1, a: [] }, { $push: { a: { $slice: 1 } } }).doc).a).toEqual([{ $slice: 1 }]);
  });

  it("$bit works on ints and longs and refuses anything else", () => {
    expect(plain(update({ _id: 1, f: 13 }, { $bit: { f: { and: 10 } } }).doc).f).toBe(8);
    expect(update({ _id: 1, f: 5 }, { $bit: { f: { or: Long.fromNumber(2) } } }).doc.f).toEqual({ $numberLong: "7" });
    expect(refusal({ _id: 1, f: "x" }, { $bit: { f: { xor: 1 } } })).toBe(
      "Cannot apply $bit to a value of non-integral type._id: 1 has the field f of non-integer type string",
    );
    expect(() => checkUpdateOperators({ $bit: { f: { and: 1.5 } } })).toThrow(/must be an Integer\(32\/64 bit\)/);
    expect(() => checkUpdateOperators({ $bit: { f: { nand: 1 } } })).toThrow(/only supports 'and', 'or', and 'xor'/);
  });

  it("checks operands when the update is parsed", () => {
    const cases: [Document, RegExp][] = [
      [
        { $set: 5 },
        /^Modifiers operate on fields but we found type int instead\. For example: \{\$mod: \{<field>: \.\.\.\}\} not \{\$set: 5\}$/,
      ],
      [{ $pop: { a: 1.5 } }, /^Expected an integer: a: 1\.5$/],
      [{ $push: { a: { $each: [1], $sort: 2 } } }, /^The \$sort element value must be either 1 or -1$/],
      [{ $push: { a: { $each: [1], $sort: {} } } }, /^The sort pattern is empty when it should be a set of fields\.$/],
      [
        { $addToSet: { a: { $each: [1], x: 1 } } },
        /^Found unexpected fields after \$each in \$addToSet: \{ \$each: \[ 1 \], x: 1 \}$/,
      ],
      [{ $pull: { a: { $who: 1 } } }, /\$who/],
      [{ $inc: { a: "x" } }, /^Cannot increment with non-numeric argument: \{a: "x"\}$/],
      [{ $mul: { a: null } }, /^Cannot multiply with non-numeric argument: \{a: null\}$/],
      [{ $pop: { a: 2 } }, /^\$pop expects 1 or -1, found: 2$/],
      [{ $pullAll: { a: 1 } }, /^\$pullAll requires an array argument but was given a int$/],
      [{ $rename: { a: 1 } }, /^The 'to' field for \$rename must be a string/],
      [{ $rename: { a: "a" } }, /^The source and target field for \$rename must differ/],
      [{ $rename: { a: "a.b" } }, /must not be on the same path/],
      [{ $rename: { "a.$": "b" } }, /^The source field for \$rename may not be dynamic: a\.\$$/],
      [{ $currentDate: { a: { $type: "clock" } } }, /required to be 'date' or 'timestamp'/],
      [{ $currentDate: { a: 5 } }, /^int is not valid type for \$currentDate\. Please use a boolean/],
      [{ $push: { a: { $each: 1 } } }, /The argument to \$each in \$push must be an array/],
    ];
    for (const [spec, message] of cases)
      expect(() => checkUpdateOperators(spec), JSON.stringify(spec)).toThrow(message);
  });
});

describe("the paths an update reports (its change event's updateDescription)", () => {
  it("names a created path by its first new field, an appended element by its index", () => {
    expect(update({ _id: 1 }, { $set: { "a.b.c": 1 } }).paths).toEqual(["a"]);
    expect(update({ _id: 1, a: { x: 1 } }, { $set: { "a.b.c": 1 } }).paths).toEqual(["a.b"]);
    expect(update({ _id: 1, a: { b: 0 } }, { $inc: { "a.b": 1 } }).paths).toEqual(["a.b"]);
    expect(update({ _id: 1, tags: ["x"] }, { $push: { tags: { $each: ["y", "z"] } } }).paths).toEqual([
      "tags.1",
      "tags.2",
    ]);
    expect(update({ _id: 1, tags: ["x"] }, { $push: { tags: "y" } }).paths).toEqual(["tags.1"]);
    expect(update({ _id: 1, tags: ["x"] }, { $push: { tags: { $each: ["a"], $sort: 1 } } }).paths).toEqual(["tags"]);
    expect(update({ _id: 1 }, { $push: { tags: "y" } }).paths).toEqual(["tags"]);
    expect(update({ _id: 1, a: 1 }, { $rename: { a: "b.c" } }).paths).toEqual(["a", "b"]);
  });
});

describe("$currentDate's timestamps", () => {
  it("count up within a second, whatever other apps' clocks (moved or not) made in between", () => {
    const at = (now: number) =>
      withQueryLimits(defaultQueryLimits, () => update({ _id: 1 }, { $currentDate: { t: { $type: "timestamp" } } }), {
        now,
      }).doc.t as { $timestamp: { t: number; i: number } };
    const second = Math.floor(Date.now() / 1000) * 1000;
    const elsewhere = second + 86_400_000;
    const made = [at(second), at(elsewhere), at(second), at(elsewhere), at(second)].map((ts) => ts.$timestamp);
    const mine = [made[0]!, made[2]!, made[4]!];
    expect(new Set(mine.map(({ t }) => t))).toEqual(new Set([second / 1000]));
    expect(mine[1]!.i).toBeGreaterThan(mine[0]!.i);
    expect(mine[2]!.i).toBeGreaterThan(mine[1]!.i);
    expect(made[3]!.i).toBeGreaterThan(made[1]!.i);
  });
});
