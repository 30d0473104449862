/**
 * Pipelines MongoDB refuses to parse, refused before any stage runs with MongoDB's texts
 * (stage-specs.ts), and the stages whose answers were mingo's: `$sample` draws distinct
 * documents, `$lookup`'s concise form runs its pipeline over the matches only,
 * `$replaceRoot`/`$replaceWith` refuse a value that is no document.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const orders = [
  { _id: 1, item: "a", qty: 2 },
  { _id: 2, item: "b", qty: 1 },
  { _id: 3, qty: 5 },
  { _id: 4, item: "a", qty: 1 },
];
const items = [
  { _id: 10, sku: "a", stock: 5 },
  { _id: 11, sku: "b", stock: 0 },
  { _id: 12, sku: ["a", "c"], stock: 7 },
];

function run(pipeline: unknown[], docs: unknown[] = orders): unknown {
  try {
    const resolver = (name: string) => (name === "items" ? (fromEJSON(items) as Document[]) : []);
    return toEJSON(
      aggregate(fromEJSON(docs) as Document[], fromEJSON(pipeline) as Document[], { collectionResolver: resolver }),
    );
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}

/** The refusal of a pipeline over no documents (MongoDB parses before it reads). */
const refusal = (pipeline: unknown[]) => run(pipeline, []);

describe("a pipeline's shape", () => {
  it("is one field a stage, naming a stage MongoDB knows, checked before any stage's arguments", () => {
    expect(refusal([5])).toBe("ERR Each element of the 'pipeline' array must be an object");
    expect(refusal([{ $match: {}, $limit: 1 }])).toBe(
      "ERR A pipeline stage specification object must contain exactly one field.",
    );
    expect(refusal([{}])).toBe("ERR A pipeline stage specification object must contain exactly one field.");
    expect(refusal([{ $limit: -1 }, { $foo: 1 }])).toBe("ERR Unrecognized pipeline stage name: '$foo'.");
    expect(refusal([{ $facet: { a: [{ $bar: 1 }] } }])).toBe("ERR Unrecognized pipeline stage name: '$bar'.");
  });

  it("refuses a known stage this server does not run in words of its own", () => {
    expect(refusal([{ $search: { text: { query: "a", path: "item" } } }])).toBe(
      "ERR $search is not supported by this server",
    );
  });

  it("keeps $facet's sub-pipelines to the stages MongoDB allows there", () => {
    expect(refusal([{ $facet: {} }])).toBe(
      "ERR the $facet specification must be a non-empty object, but found: $facet: {}",
    );
    expect(refusal([{ $facet: { a: 5 } }])).toBe("ERR arguments to $facet must be arrays, a is type int");
    expect(refusal([{ $facet: { a: [{ $facet: { b: [] } }] } }])).toBe(
      "ERR $facet is not allowed to be used within a $facet stage",
    );
    // (Pipeline::validateFacetPipeline; an output is a field name, FieldPath's checks.)
    expect(refusal([{ $facet: { a: [] } }])).toBe("ERR sub-pipeline in $facet stage cannot be empty");
    expect(refusal([{ $facet: { "a.b": [{ $limit: 1 }] } }])).toBe("ERR FieldPath field names may not contain '.'.");
    expect(refusal([{ $facet: { $a: [{ $limit: 1 }] } }])).toBe(
      "ERR FieldPath field names may not start with '$'. Consider using $getField or $setField.",
    );
  });
});

describe("a pipeline's length and depth", () => {
  const times = (n: number, stage: unknown) => Array.from({ length: n }, () => stage);
  const nested = (depth: number, stage: (inner: unknown[]) => unknown): unknown[] =>
    depth === 0 ? [] : [stage(nested(depth - 1, stage))];

  it("is at most 1,000 stages as written, in every pipeline a stage holds", () => {
    expect(refusal(times(1000, { $project: { _id: 1 } }))).toEqual([]);
    const refused = "ERR Pipeline length must be no longer than 1000 stages.";
    expect(refusal(times(1001, { $project: { _id: 1 } }))).toBe(refused);
    expect(refusal([{ $lookup: { from: "items", as: "m", pipeline: times(1001, { $match: {} }) } }])).toBe(refused);
    expect(refusal([{ $unionWith: { coll: "items", pipeline: times(1001, { $match: {} }) } }])).toBe(refused);
    expect(refusal([{ $facet: { a: times(1001, { $match: {} }), b: [] } }])).toBe(refused);
    // The shape of the whole pipeline is read first, the length before any stage's arguments.
    expect(refusal([...times(1001, { $match: {} }), { $who: 1 }])).toBe(
      "ERR Unrecognized pipeline stage name: '$who'.",
    );
    expect(refusal([{ $limit: -1 }, ...times(1000, { $match: {} })])).toBe(refused);
  });

  it("is at most 1,000 stages once parsed: $bucket, $sortByCount, $count, $densify, sorted windows are two", () => {
    const refused = "ERR Pipeline length must be no longer than 1000 stages";
    const twos = [
      { $bucket: { groupBy: "$qty", boundaries: [0, 10], default: "other" } },
      { $sortByCount: "$item" },
      { $count: "n" },
      { $densify: { field: "qty", range: { step: 1, bounds: "full" } } },
      { $setWindowFields: { sortBy: { qty: 1 }, output: { n: { $documentNumber: {} } } } },
      { $setWindowFields: { partitionBy: "$item", output: { n: { $count: {} } } } },
      { $fill: { sortBy: { qty: 1 }, output: { item: { method: "locf" } } } },
    ];
    for (const stage of twos) {
      expect(refusal(times(500, stage)), JSON.stringify(stage)).toEqual([]);
      expect(refusal(times(501, stage)), JSON.stringify(stage)).toBe(refused);
    }
    const three = { $fill: { sortBy: { qty: 1 }, output: { item: { method: "locf" }, qty: { value: 0 } } } };
    expect(refusal(times(333, three))).toEqual([]);
    expect(refusal(times(334, three))).toBe(refused);
    expect(refusal(times(1000, { $setWindowFields: { output: { n: { $count: {} } } } }))).toEqual([]);
    expect(refusal(times(1000, { $fill: { output: { qty: { value: 0 } } } }))).toEqual([]);
    // Counted once every stage is parsed: a later stage's arguments are refused first.
    expect(refusal([...times(501, { $count: "n" }), { $limit: -1 }])).toBe(
      "ERR invalid argument to $limit stage: Expected a non-negative number in: $limit: -1",
    );
  });

  it("checks that $geoNear comes first once every stage is parsed", () => {
    const geoNear = { $geoNear: { near: [0, 0], distanceField: "d" } };
    expect(refusal([{ $match: {} }, geoNear])).toBe("ERR $geoNear is only valid as the first stage in a pipeline");
    expect(refusal([{ $match: {} }, geoNear, { $limit: -1 }])).toBe(
      "ERR invalid argument to $limit stage: Expected a non-negative number in: $limit: -1",
    );
  });

  it("nests $lookup, $unionWith and $graphLookup at most 20 deep ($facet adds no depth)", () => {
    const lookup = (pipeline: unknown[]) => ({ $lookup: { from: "items", as: "m", pipeline } });
    const union = (pipeline: unknown[]) => ({ $unionWith: { coll: "items", pipeline } });
    const refused = "ERR Maximum number of nested sub-pipelines exceeded. Limit is 20";
    expect(refusal(nested(20, lookup))).toEqual([]);
    expect(refusal(nested(21, lookup))).toBe(refused);
    // (Each $unionWith adds the three items.)
    expect(refusal(nested(20, union))).toHaveLength(60);
    expect(refusal(nested(21, union))).toBe(refused);
    const graphLookup = {
      $graphLookup: { from: "items", startWith: "$a", connectFromField: "a", connectToField: "b", as: "g" },
    };
    expect(refusal(nested(19, (inner) => lookup(inner.length === 0 ? [graphLookup] : inner)))).toEqual([]);
    expect(refusal(nested(20, (inner) => lookup(inner.length === 0 ? [graphLookup] : inner)))).toBe(refused);
    expect(refusal([{ $facet: { a: nested(20, lookup) } }])).toEqual([{ a: [] }]);
  });
});

describe("stage arguments", () => {
  it("$limit and $skip take a non-negative integer, $limit a positive one", () => {
    expect(refusal([{ $limit: 0 }])).toBe("ERR the limit must be positive");
    expect(refusal([{ $limit: -1 }])).toBe(
      "ERR invalid argument to $limit stage: Expected a non-negative number in: $limit: -1",
    );
    expect(refusal([{ $limit: 1.5 }])).toBe("ERR invalid argument to $limit stage: Expected an integer: $limit: 1.5");
    expect(refusal([{ $limit: 1e30 }])).toBe(
      "ERR invalid argument to $limit stage: Cannot represent as a 64-bit integer: $limit: 1e+30.0",
    );
    expect(refusal([{ $limit: "a" }])).toBe('ERR invalid argument to $limit stage: Expected a number in: $limit: "a"');
    expect(refusal([{ $skip: -1 }])).toBe(
      "ERR invalid argument to $skip stage: Expected a non-negative number in: $skip: -1",
    );
    expect(run([{ $skip: 0 }, { $limit: { $numberLong: "1" } }, { $project: { _id: 1 } }])).toEqual([
      { _id: { $numberInt: "1" } },
    ]);
  });

  it("$count takes a plain field name", () => {
    expect(refusal([{ $count: "" }])).toBe("ERR the count field must be a non-empty string");
    expect(refusal([{ $count: 1 }])).toBe("ERR the count field must be a non-empty string");
    expect(refusal([{ $count: "$n" }])).toBe("ERR the count field cannot be a $-prefixed path");
    expect(refusal([{ $count: "a.b" }])).toBe("ERR the count field cannot contain '.'");
  });

  it("$sort takes keys of 1 or -1", () => {
    expect(refusal([{ $sort: {} }])).toBe("ERR $sort stage must have at least one sort key");
    expect(refusal([{ $sort: 5 }])).toBe("ERR the $sort key specification must be an object");
    expect(refusal([{ $sort: { qty: 2 } }])).toBe(
      "ERR $sort key ordering must be 1 (for ascending) or -1 (for descending)",
    );
    expect(refusal([{ $sort: { qty: "up" } }])).toBe('ERR Illegal key in $sort specification: qty: "up"');
    expect(refusal([{ $sort: { qty: { $max: 1 } } }])).toBe(
      "ERR $meta is the only expression supported by $sort right now",
    );
  });

  it("$project, $unset and $sortByCount refuse what MongoDB refuses", () => {
    expect(refusal([{ $project: {} }])).toBe(
      "ERR Invalid $project :: caused by :: projection specification must have at least one field",
    );
    expect(refusal([{ $unset: "" }])).toBe(
      "ERR Invalid $unset :: caused by :: FieldPath cannot be constructed with empty string",
    );
    expect(refusal([{ $unset: [] }])).toBe(
      "ERR $unset specification must be a string or an array with at least one field",
    );
    expect(refusal([{ $unset: ["a", 1] }])).toBe(
      "ERR $unset specification must be a string or an array containing only string values",
    );
    expect(refusal([{ $sortByCount: "item" }])).toBe(
      "ERR the sortByCount field must be defined as a $-prefixed path or an expression inside an object",
    );
  });

  it("$project's paths, inclusions and expressions, as MongoDB's projection parser reads them", () => {
    const refused = (projection: unknown) => refusal([{ $project: projection }]);
    const invalid = (why: string) => `ERR Invalid $project :: caused by :: ${why}`;
    expect(refused({ a: 1, "a.b": 1 })).toBe(invalid("Path collision at a.b remaining portion b"));
    expect(refused({ "a.b": 1, a: 1 })).toBe(invalid("Path collision at a"));
    expect(refused({ a: 0, "a.b": 0 })).toBe(invalid("Path collision at a.b remaining portion b"));
    expect(refused({ "a.b": 1, "a.b.c": 1 })).toBe(invalid("Path collision at a.b.c remaining portion b.c"));
    expect(refused({ a: 1, b: 0 })).toBe(invalid("Cannot do exclusion on field b in inclusion projection"));
    expect(refused({ b: false, a: true })).toBe(invalid("Cannot do inclusion on field a in exclusion projection"));
    expect(refused({ a: { b: 1, c: 0 } })).toBe(invalid("Cannot do exclusion on field c in inclusion projection"));
    expect(refused({ a: 0, b: { $add: [1, 2] } })).toBe(
      invalid("Cannot use expression other than $meta in exclusion projection"),
    );
    expect(refused({ a: 0, b: "x" })).toBe(invalid('Cannot use an expression b: "x" in an exclusion projection'));
    expect(refused({ a: { $foo: 1 } })).toBe(invalid("Unknown expression $foo"));
    expect(refused({ "a.$": 1 })).toBe(invalid("Cannot use positional projection in aggregation projection"));
    expect(refused({ a: { $elemMatch: { b: 1 } } })).toBe(invalid("Cannot use $elemMatch in this context"));
    expect(refused({ $a: 1 })).toBe(
      invalid("FieldPath field names may not start with '$'. Consider using $getField or $setField."),
    );
    // _id may be kept or dropped in either kind; a sub-projection and a dotted path share their parent.
    expect(run([{ $project: { _id: 0, qty: 1 } }, { $limit: 1 }])).toEqual([{ qty: { $numberInt: "2" } }]);
    expect(run([{ $project: { _id: 1, qty: 0, item: 0 } }, { $limit: 1 }])).toEqual([{ _id: { $numberInt: "1" } }]);
    expect(run([{ $match: { _id: 1 } }, { $project: { a: { b: 1 }, "a.c": 1, n: { $literal: 0 } } }])).toEqual([
      { _id: { $numberInt: "1" }, n: { $numberInt: "0" } },
    ]);
  });

  it("$sample takes a size", () => {
    expect(refusal([{ $sample: 5 }])).toBe("ERR the $sample stage specification must be an object");
    expect(refusal([{ $sample: {} }])).toBe("ERR $sample stage must specify a size");
    expect(refusal([{ $sample: { size: -1 } }])).toBe("ERR size argument to $sample must not be negative");
    expect(refusal([{ $sample: { size: 1, n: 1 } }])).toBe("ERR unrecognized option to $sample: n");
  });

  it("$lookup needs its source, its output field and a way to match", () => {
    expect(refusal([{ $lookup: { localField: "item", foreignField: "sku", as: "m" } }])).toBe(
      "ERR must specify 'pipeline' when 'from' is empty",
    );
    expect(refusal([{ $lookup: { from: "items", localField: "item", foreignField: "sku" } }])).toBe(
      "ERR must specify 'as' field for a $lookup",
    );
    expect(refusal([{ $lookup: { from: "items", localField: "item", as: "m" } }])).toBe(
      "ERR $lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified",
    );
    expect(refusal([{ $lookup: { from: "items", as: 1, pipeline: [] } }])).toBe(
      "ERR $lookup argument 'as' must be a string, found as: 1: int",
    );
    expect(refusal([{ $lookup: { from: "items", as: "m", pipeline: [], on: "x" } }])).toBe(
      "ERR unknown argument to $lookup: on",
    );
  });

  it("checks a $group met earlier before a later stage", () => {
    expect(refusal([{ $group: { _id: null, n: 1 } }, { $limit: 0 }])).toBe(
      "ERR The field 'n' must be an accumulator object",
    );
  });
});

describe("stages that answered otherwise", () => {
  it("$count answers no document over none, as the $group it is", () => {
    expect(run([{ $count: "n" }], [])).toEqual([]);
    expect(run([{ $match: { qty: { $gt: 9 } } }, { $count: "n" }])).toEqual([]);
    expect(run([{ $count: "n" }])).toEqual([{ n: { $numberInt: "4" } }]);
  });

  it("$sample draws distinct documents, all of them when there are fewer than its size", () => {
    const out = run([{ $sample: { size: 10 } }, { $project: { _id: 1 } }]) as { _id: unknown }[];
    expect(out).toHaveLength(4);
    expect(new Set(out.map((doc) => JSON.stringify(doc._id))).size).toBe(4);
    expect(run([{ $sample: { size: 2 } }, { $count: "n" }])).toEqual([{ n: { $numberInt: "2" } }]);
  });

  it("$lookup with localField, foreignField and a pipeline runs the pipeline over the matches only", () => {
    expect(
      run([
        { $match: { _id: 1 } },
        {
          $lookup: {
            from: "items",
            localField: "item",
            foreignField: "sku",
            let: { q: "$qty" },
            pipeline: [{ $project: { _id: 1, enough: { $gte: ["$stock", "$$q"] } } }],
            as: "m",
          },
        },
        { $project: { _id: 0, m: 1 } },
      ]),
    ).toEqual([
      {
        m: [
          { _id: { $numberInt: "10" }, enough: true },
          { _id: { $numberInt: "12" }, enough: true },
        ],
      },
    ]);
  });

  it("$replaceRoot and $replaceWith refuse a value that is no document, as MongoDB words it", () => {
    expect(run([{ $replaceRoot: { newRoot: "$qty" } }])).toBe(
      "ERR 'newRoot' expression  must evaluate to an object, but resulting value was: 2. Type of resulting value: 'int'. " +
        'Input document: {_id: 1, item: "a", qty: 2}',
    );
    expect(run([{ $replaceWith: "$missing" }])).toBe(
      "ERR 'replacement document'  must evaluate to an object, but resulting value was: MISSING. Type of resulting value: 'missing'. " +
        'Input document: {_id: 1, item: "a", qty: 2}',
    );
    expect(refusal([{ $replaceRoot: { root: "$a" } }])).toBe("ERR BSON field '$replaceRoot.root' is an unknown field.");
  });

  it("$where is refused: no server-side JavaScript runs here", () => {
    expect(run([{ $match: { $where: "this.qty > 1" } }])).toBe("ERR $where is not allowed in this context");
  });
});
