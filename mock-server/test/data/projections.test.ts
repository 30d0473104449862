/**
 * Projections laid out as MongoDB lays them out (data/projections.ts): kept fields in the
 * document's order, `_id` first, computed ones after in the projection's order; a find's `$slice`
 * alone keeps the other fields. Key order is compared exactly (JSON text), as a client reads it.
 * And the stages that reshape embedded documents (data/add-fields.ts, exclusions) over stored
 * documents, which are frozen: nothing is changed in place.
 */
import { Decimal128, Long } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate, find } from "../../src/data/query-engine.ts";

const doc = fromEJSON({
  _id: 1,
  a: [
    { b: 1, c: 2 },
    { c: 4, b: 3 },
  ],
  x: { z: 2, y: 1 },
  arr: [1, 2, 3, 4, 5],
  s: "t",
}) as Document;
const keys = (value: unknown) => JSON.stringify(value);
const projected = (projection: Document) => keys(find([doc], {}, { projection })[0]);

describe("a find's positional projection", () => {
  const matched = (query: Document, projection: Document) => {
    try {
      return keys(find([doc], query, { projection })[0]);
    } catch (error) {
      return (error as Error).message;
    }
  };

  it("keeps the element of the array the query matched", () => {
    expect(matched({ "a.b": 3 }, { "a.$": 1 })).toBe('{"_id":1,"a":[{"c":4,"b":3}]}');
    expect(matched({ arr: { $gte: 4 } }, { "arr.$": 1, s: 1, _id: 0 })).toBe('{"arr":[4],"s":"t"}');
    expect(matched({ a: { $elemMatch: { c: 2 } } }, { "a.$": 1, _id: 0 })).toBe('{"a":[{"b":1,"c":2}]}');
  });

  it("applies to the first array on its path, and includes a path that meets none as it is", () => {
    // jstests/core/query/project/positional_projection.js.
    const one = (query: Document, projection: Document, input: Document) =>
      keys(find([fromEJSON({ _id: 0, ...input }) as Document], query, { projection: { _id: 0, ...projection } })[0]);
    expect(one({ x: 1 }, { "a.$": 1 }, { x: 1 })).toBe("{}");
    expect(one({ "a.b": 1 }, { "g.$": 1 }, { a: { b: 1 } })).toBe("{}");
    expect(
      one({ x: { $gt: 0 } }, { "a.b.c.$": 1 }, { x: [-1, 1, 2], a: { b: { d: [1, 2, 3], f: 456 }, e: 123 } }),
    ).toBe('{"a":{"b":{}}}');
    expect(one({ x: { $gt: 0 } }, { "a.b.c.$": 1 }, { x: [-1, 1, 2], a: { b: { c: 123 } } })).toBe(
      '{"a":{"b":{"c":123}}}',
    );
    expect(one({ x: 1 }, { "a.b.c.$": 1 }, { x: [1], a: [{ b: [[[{ c: 1, d: 2 }]]] }] })).toBe(
      '{"a":[{"b":[[[{"c":1}]]]}]}',
    );
    const z = { x: { y: { z: [0, 1, 2] } } };
    expect(one({ "x.y.z": 1 }, { "a.b.c.$": 1 }, { ...z, a: [{ b: { c: [1, 2] } }, { b: { c: [4, 5] } }] })).toBe(
      '{"a":[{"b":{"c":[4,5]}}]}',
    );
    expect(one({ "x.y.z": 1 }, { "a.b.c.$": 1 }, { ...z, a: { b: [{ c: [1, 2] }, { c: [4, 5] }] } })).toBe(
      '{"a":{"b":[{"c":[4,5]}]}}',
    );
    expect(one({ "x.y.z": 1 }, { "a.b.c.$": 1 }, { ...z, a: { b: { c: [1, 2, 3] } } })).toBe('{"a":{"b":{"c":[2]}}}');
  });

  it("takes an $or MongoDB rewrites as the $in or the branch it becomes", () => {
    // positional_projection.js: "the first matching index both for $in, and for $or equivalent to an $in".
    const ab = [fromEJSON({ _id: 0, a: [1, 2, 3], b: [4, 5, 6] }) as Document];
    const b = (query: Document) => {
      try {
        return keys(find(ab, query, { projection: { _id: 0, "b.$": 1 } })[0]);
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(b({ a: { $in: [2, 3] } })).toBe('{"b":[5]}');
    expect(b({ $or: [{ a: 2 }, { a: 3 }] })).toBe('{"b":[5]}');
    expect(b({ $or: [{ a: 3 }] })).toBe('{"b":[6]}');
    expect(b({ $or: [{ a: 1 }, { b: 5 }] })).toBe(
      "positional operator '.$' couldn't find a matching element in the array",
    );
    expect(b({ $or: [{ a: 0 }, { a: { $gt: 2 } }] })).toBe(
      "positional operator '.$' couldn't find a matching element in the array",
    );
  });

  it("is refused when the query matched no element of an array", () => {
    expect(matched({ s: "t" }, { "arr.$": 1 })).toBe(
      "positional operator '.$' couldn't find a matching element in the array",
    );
    expect(matched({ arr: 1, "a.b": 1 }, { "arr.$": 1, "a.$": 1 })).toBe(
      "Cannot specify more than one positional projection per query.",
    );
  });
});

describe("a find's $slice and $elemMatch", () => {
  /** The projection of one document (`_id` 9), without its `_id` unless `keepId`. */
  const one = (projection: Document, input: Document, keepId = false) => {
    const out = find([fromEJSON({ _id: 9, ...input }) as Document], {}, { projection })[0] as Document;
    if (!keepId) delete out._id;
    return out;
  };
  // jstests/core/query/project/slice1.js: at any depth, through arrays of documents (one level),
  // an exclusion unless the projection's other fields include.
  const cases: [string, Document, Document, Document][] = [
    [
      "multi",
      { a: { b: { $slice: [1, 1] } } },
      { a: [{ b: [1, 2, 3] }, [[{ b: [1, 2, 3] }]], { b: [1, 2, 3] }, 1, null, {}] },
      { a: [{ b: [2] }, [[{ b: [1, 2, 3] }]], { b: [2] }, 1, null, {}] },
    ],
    [
      "deep",
      { "a.b.c.d.e": { $slice: [1, 1] } },
      { a: [{ b: [{ c: [{ d: [{ e: [1, 2, 3] }] }] }] }] },
      { a: [{ b: [{ c: [{ d: [{ e: [2] }] }] }] }] },
    ],
    [
      "incl",
      { a: { b: { c: { $slice: [1, 1] }, d: 1 } } },
      {
        a: [
          { b: { c: [1, 2, 3], d: 123, x: 1 } },
          [{ b: { c: [1, 2, 3], d: 123 } }],
          {
            b: [
              { c: [1, 2, 3], d: 123 },
              { c: [4, 5, 6], d: 456 },
            ],
          },
        ],
      },
      {
        a: [
          { b: { c: [2], d: 123 } },
          [{ b: { c: [1, 2, 3], d: 123 } }],
          {
            b: [
              { c: [2], d: 123 },
              { c: [5], d: 456 },
            ],
          },
        ],
      },
    ],
    [
      "excl",
      { a: { b: { c: { $slice: [1, 1] }, d: 0 } } },
      { a: [{ b: { c: [1, 2, 3], d: 123 } }, [{ b: { c: [1, 2, 3], d: 123 } }], { b: [{ c: [1, 2, 3], d: 123 }] }] },
      { a: [{ b: { c: [2] } }, [{ b: { c: [1, 2, 3] } }], { b: [{ c: [2] }] }] },
    ],
    [
      "two",
      { a: { b: { $slice: [1, 1] } }, c: { d: { $slice: -1 } } },
      {
        a: [
          { b: [1, 2, 3] },
          [{ b: [1, 2, 3] }],
          {
            b: [
              [1, 2, 3],
              [4, 5, 6],
            ],
          },
        ],
        c: [
          { d: [1, 2, 3] },
          {
            d: [
              [1, 2, 3],
              [4, 5, 6],
              [7, 8, 9],
            ],
          },
        ],
      },
      { a: [{ b: [2] }, [{ b: [1, 2, 3] }], { b: [[4, 5, 6]] }], c: [{ d: [3] }, { d: [[7, 8, 9]] }] },
    ],
    ["obj", { a: { $slice: 1 } }, { a: { c: 123 } }, { a: { c: 123 } }],
    ["obj incl", { a: { $slice: 1 }, d: 1 }, { a: { c: 123 }, d: 456 }, { a: { c: 123 }, d: 456 }],
    ["obj excl", { a: { $slice: 1 }, d: 0 }, { a: { c: 123 }, d: 456 }, { a: { c: 123 } }],
    ["missing", { a: { $slice: 1 } }, { b: { e: 123 } }, { b: { e: 123 } }],
    ["missing incl", { a: { $slice: 1 }, d: 1 }, { b: { e: 123 }, d: 456 }, { d: 456 }],
    ["missing excl", { a: { $slice: 1 }, d: 0 }, { b: { e: 123 }, d: 456 }, { b: { e: 123 } }],
    [
      "deep arrays",
      { "a.b.c": { $slice: 1 } },
      { a: [[[{ b: [[[{ c: [1, 2, 3] }]]] }]]] },
      { a: [[[{ b: [[[{ c: [1, 2, 3] }]]] }]]] },
    ],
    [
      "deep arrays excl",
      { "a.b.c": { $slice: 1 }, d: 0 },
      { a: [[[{ b: [[[{ c: [1, 2, 3] }]]] }]]], d: 456 },
      { a: [[[{ b: [[[{ c: [1, 2, 3] }]]] }]]] },
    ],
    [
      "filter in deep",
      { e: 1, "a.b": { $slice: 1 } },
      { e: 123, a: [[[{ b: [1, 2, 3], d: 4, f: 5 }]]] },
      { e: 123, a: [[[{ b: [1, 2, 3] }]]] },
    ],
    ["b true", { a: { $slice: 3 }, b: true }, { a: [0, 1, 2, 3], b: 1, c: 1 }, { a: [0, 1, 2], b: 1 }],
    ["b false", { a: { $slice: 3 }, b: false }, { a: [0, 1, 2, 3], b: 1, c: 1 }, { a: [0, 1, 2], c: 1 }],
    ["neg", { a: { $slice: [-5, 4] } }, { a: [0, 1, 2, 3, 4, 5, -5, -4, -3, -2, -1] }, { a: [-5, -4, -3, -2] }],
  ];
  it.each(cases)("slices %s as MongoDB does", (_name, projection, input, expected) => {
    expect(JSON.stringify(one(projection, input))).toBe(JSON.stringify(expected));
  });

  it("reads _id: 1 beside a $slice as an inclusion, fractions truncated, Decimal128 flags as flags", () => {
    expect(one({ _id: 1, a: { $slice: [1, 1] } }, { a: [1, 2, 3], z: 1 }, true)).toEqual({ _id: 9, a: [2] });
    expect(one({ _id: 0, a: { $slice: [1, 1] } }, { a: [1, 2, 3], z: 1 }, true)).toEqual({ a: [2], z: 1 });
    expect(one({ a: { $slice: 1.9 } }, { a: [1, 2, 3] })).toEqual({ a: [1] });
    // (projection_parser.cpp's isInclusionOrExclusionType: every number is a flag.)
    expect(one({ a: Decimal128.fromString("1") }, { a: 1, b: 2 })).toEqual({ a: 1 });
    expect(one({ a: Decimal128.fromString("0") }, { a: 1, b: 2 })).toEqual({ b: 2 });
    expect(one({ a: Long.fromNumber(0) }, { a: 1, b: 2 })).toEqual({ b: 2 });
  });

  it("keeps the other fields for an $elemMatch beside an exclusion or a $slice", () => {
    // jstests/core/query/elemmatch/elemmatch_projection.js.
    expect(one({ x: { $elemMatch: { $gt: 2 } }, d: 0 }, { x: { a: 123 }, d: 456 })).toEqual({});
    expect(one({ x: { $elemMatch: { a: 3 } }, d: 0 }, { x: [{ a: 1 }, { a: 3 }], d: 456, e: 1 })).toEqual({
      x: [{ a: 3 }],
      e: 1,
    });
    expect(one({ x: { $slice: 1 }, y: { $elemMatch: { $gt: 4 } } }, { x: [1, 2, 3], y: [4, 5, 6], d: 456 })).toEqual({
      x: [1],
      y: [5],
      d: 456,
    });
    // Alone, an $elemMatch includes.
    expect(one({ x: { $elemMatch: { a: 3 } } }, { x: [{ a: 1 }, { a: 3 }], d: 456 })).toEqual({ x: [{ a: 3 }] });
  });
});

describe("a find's projection", () => {
  it("keeps the document's order, _id first, whatever the projection's order", () => {
    expect(projected({ s: 1, x: 1 })).toBe('{"_id":1,"x":{"z":2,"y":1},"s":"t"}');
    expect(projected({ "x.y": 1, "x.z": 1, _id: 0 })).toBe('{"x":{"z":2,"y":1}}');
    expect(projected({ "a.b": 1, s: 1 })).toBe('{"_id":1,"a":[{"b":1},{"b":3}],"s":"t"}');
    expect(projected({ s: 0, x: 0 })).toBe('{"_id":1,"a":[{"b":1,"c":2},{"c":4,"b":3}],"arr":[1,2,3,4,5]}');
  });

  it("puts computed fields after the kept ones, in the projection's order", () => {
    expect(projected({ n: "$s", s: 1, t: { $literal: 5 } })).toBe('{"_id":1,"s":"t","n":"t","t":5}');
    expect(projected({ s: { $toUpper: "$s" }, x: 1 })).toBe('{"_id":1,"x":{"z":2,"y":1},"s":"T"}');
  });

  it("keeps every other field with $slice alone, only the named ones beside inclusions", () => {
    expect(projected({ arr: { $slice: 2 } })).toBe(
      '{"_id":1,"a":[{"b":1,"c":2},{"c":4,"b":3}],"x":{"z":2,"y":1},"arr":[1,2],"s":"t"}',
    );
    expect(projected({ arr: { $slice: [-2, 1] }, _id: 0, a: 0 })).toBe('{"x":{"z":2,"y":1},"arr":[4],"s":"t"}');
    expect(projected({ arr: { $slice: 1 }, s: 1 })).toBe('{"_id":1,"arr":[1],"s":"t"}');
    expect(projected({ a: { $elemMatch: { b: 3 } } })).toBe('{"_id":1,"a":[{"c":4,"b":3}]}');
  });
});

describe("a find's $elemMatch projection", () => {
  // (elemmatch_projection.js: the first element matching, as a query's $elemMatch would.)
  const values = fromEJSON({ _id: 1, x: [1, 2, 4, 3, 5], mixed: ["string", 123, { a: 1 }], y: 7 }) as Document;
  const elem = (projection: Document) => keys(find([values], {}, { projection })[0]);

  it("matches elements that are values by operator conditions", () => {
    expect(elem({ x: { $elemMatch: { $gt: 2, $lt: 4 } } })).toBe('{"_id":1,"x":[3]}');
    expect(elem({ x: { $elemMatch: { $in: [5, 4] } }, y: 1 })).toBe('{"_id":1,"x":[4],"y":7}');
    expect(elem({ _id: 0, x: { $elemMatch: { $nin: [1, 2] } } })).toBe('{"x":[4]}');
  });

  it("matches documents or arrays by field conditions; an empty one takes the first of them", () => {
    expect(elem({ mixed: { $elemMatch: {} } })).toBe('{"_id":1,"mixed":[{"a":1}]}');
    expect(elem({ mixed: { $elemMatch: { a: 1 } } })).toBe('{"_id":1,"mixed":[{"a":1}]}');
  });

  it("leaves the field out when nothing matches or it is no array", () => {
    expect(elem({ x: { $elemMatch: { $gt: 100 } } })).toBe('{"_id":1}');
    expect(elem({ y: { $elemMatch: { $gt: 1 } } })).toBe('{"_id":1}');
  });
});

describe("the $project stage", () => {
  it("writes _id first and kept fields in the document's order, computed ones after", () => {
    const [out] = aggregate([doc], [{ $project: { total: { $sum: "$arr" }, s: 1, x: { y: 1 } } }]);
    expect(keys(out)).toBe('{"_id":1,"x":{"y":1},"s":"t","total":15}');
    const [grouped] = aggregate([doc], [{ $group: { _id: "$s", n: { $sum: 1 } } }, { $project: { n: 1 } }]);
    expect(keys(grouped)).toBe('{"_id":"t","n":1}');
  });

  it("writes computed fields in the order the projection names them", () => {
    // (ProjectionNode::applyExpressions: in the order they are written, not by name.)
    const [literal] = aggregate([doc], [{ $project: { b: { $literal: 1 }, a: { $literal: 2 } } }]);
    expect(keys(literal)).toBe('{"_id":1,"b":1,"a":2}');
    const [paths] = aggregate([doc], [{ $project: { _id: 0, z: "$s", y: 1, x: "$s" } }]);
    expect(keys(paths)).toBe('{"z":"t","x":"t"}');
    const [nested] = aggregate([doc], [{ $project: { _id: 0, "m.z": "$s", "m.b": "$s" } }]);
    expect(keys(nested)).toBe('{"m":{"z":"t","b":"t"}}');
    expect(projected({ b: { $literal: 1 }, a: "$s" })).toBe('{"_id":1,"b":1,"a":"t"}');
  });
});

describe("stages over stored (frozen) documents", () => {
  const stored = () => {
    const value = fromEJSON({ _id: 1, o: { p: 1, q: { r: 1 } }, a: [{ b: 1 }, { b: 2 }, 7], s: "x" }) as Document;
    freezeTree(value);
    return value;
  };
  const run = (pipeline: Document[]) => keys(aggregate([stored()], pipeline)[0]);

  it("exclude embedded fields without changing the document", () => {
    expect(run([{ $project: { "o.p": 0 } }])).toBe('{"_id":1,"o":{"q":{"r":1}},"a":[{"b":1},{"b":2},7],"s":"x"}');
    expect(run([{ $project: { o: { q: { r: 0 } }, _id: 0 } }])).toBe(
      '{"o":{"p":1,"q":{}},"a":[{"b":1},{"b":2},7],"s":"x"}',
    );
    expect(run([{ $unset: ["a.b", "s"] }])).toBe('{"_id":1,"o":{"p":1,"q":{"r":1}},"a":[{},{},7]}');
    expect(keys(find([stored()], {}, { projection: { "o.q": 0, a: 0 } })[0])).toBe('{"_id":1,"o":{"p":1},"s":"x"}');
  });

  it("add embedded fields as MongoDB does: merged, through arrays, replacing values that are not documents", () => {
    expect(run([{ $set: { "o.z": 5 } }])).toBe(
      '{"_id":1,"o":{"p":1,"q":{"r":1},"z":5},"a":[{"b":1},{"b":2},7],"s":"x"}',
    );
    expect(run([{ $addFields: { o: { q: { t: "$s" } } } }])).toBe(
      '{"_id":1,"o":{"p":1,"q":{"r":1,"t":"x"}},"a":[{"b":1},{"b":2},7],"s":"x"}',
    );
    expect(run([{ $set: { "a.c": "$s" } }])).toBe(
      '{"_id":1,"o":{"p":1,"q":{"r":1}},"a":[{"b":1,"c":"x"},{"b":2,"c":"x"},{"c":"x"}],"s":"x"}',
    );
    expect(run([{ $set: { "s.t": 1, n: { $literal: { k: 1 } } } }])).toBe(
      '{"_id":1,"o":{"p":1,"q":{"r":1}},"a":[{"b":1},{"b":2},7],"s":{"t":1},"n":{"k":1}}',
    );
    expect(run([{ $set: { s: "$$REMOVE", "o.p": "$missing" } }])).toBe(
      '{"_id":1,"o":{"q":{"r":1}},"a":[{"b":1},{"b":2},7]}',
    );
    // Every expression sees the stage's input.
    expect(run([{ $set: { s: "y", copy: "$s" } }, { $project: { s: 1, copy: 1, _id: 0 } }])).toBe(
      '{"s":"y","copy":"x"}',
    );
  });
});

describe("a $project computing inside embedded documents (inclusion-projection.ts)", () => {
  const source = fromEJSON({ _id: 1, x: 9, a: [1, { c: 1, d: 2 }, [{ c: 2 }]], o: { c: 3, d: 4 } }) as Document;
  freezeTree(source);
  const project = (spec: Document) => keys(aggregate([source], [{ $project: spec }])[0]);

  it("computes into each element of an array, keeping what it keeps of documents only", () => {
    expect(project({ a: { b: "$x", c: 1 } })).toBe('{"_id":1,"a":[{"c":1,"b":9},[{"c":2,"b":9}]]}');
    expect(project({ "a.b": { $literal: 1 }, _id: 0 })).toBe('{"a":[{"b":1},[{"b":1}]]}');
  });

  it("replaces a value that is no document, and creates a missing one", () => {
    expect(project({ "x.y": "$o.c", _id: 0 })).toBe('{"x":{"y":3}}');
    expect(project({ "n.y": "$o.d", o: 1, _id: 0 })).toBe('{"o":{"c":3,"d":4},"n":{"y":4}}');
    expect(project({ "o.e": "$nothing", _id: 0 })).toBe('{"o":{}}');
  });
});

describe("a projection's numeric path components", () => {
  const source = fromEJSON({ _id: 1, a: [1, { "0": "z", b: 2 }, [3, { "0": "y" }]], o: { "0": "zero", "1": "one" } });
  freezeTree(source as Document);
  const found = (projection: Document) => keys(find([source as Document], {}, { projection })[0]);
  const project = (spec: Document) => keys(aggregate([source as Document], [{ $project: spec }])[0]);

  it("name fields, not array elements, in an inclusion (through arrays of documents)", () => {
    expect(found({ "a.0": 1, _id: 0 })).toBe('{"a":[{"0":"z"},[{"0":"y"}]]}');
    expect(project({ "a.0": 1, _id: 0 })).toBe('{"a":[{"0":"z"},[{"0":"y"}]]}');
    expect(project({ a: { "0": 1 }, _id: 0 })).toBe('{"a":[{"0":"z"},[{"0":"y"}]]}');
    expect(found({ "o.1": 1, _id: 0 })).toBe('{"o":{"1":"one"}}');
  });

  it("name fields in an exclusion too", () => {
    expect(found({ "a.0": 0, o: 0 })).toBe('{"_id":1,"a":[1,{"b":2},[3,{}]]}');
    expect(project({ "a.0": 0, o: 0 })).toBe('{"_id":1,"a":[1,{"b":2},[3,{}]]}');
  });
});

describe("an empty sub-projection", () => {
  const refusal = (run: () => unknown) => {
    try {
      run();
      return "answered";
    } catch (error) {
      return (error as Error).message;
    }
  };

  it("is refused as MongoDB's parser refuses it, by find and by $project", () => {
    const text = "An empty sub-projection is not a valid value. Found empty object at path";
    expect(refusal(() => find([doc], {}, { projection: { x: {} } }))).toBe(text);
    expect(refusal(() => find([doc], {}, { projection: { x: { y: {} } } }))).toBe(text);
    expect(refusal(() => aggregate([doc], [{ $project: { a: {} } }]))).toBe(`Invalid $project :: caused by :: ${text}`);
    expect(refusal(() => find([doc], {}, { projection: {} }))).toBe("answered");
  });
});

describe("a find's projection computing inside embedded documents", () => {
  const source = fromEJSON({ _id: 1, x: 9, a: [1, { c: 1, d: 2 }, [{ c: 2 }]] }) as Document;
  freezeTree(source);

  it("computes into each element of an array as $project does", () => {
    expect(keys(find([source], {}, { projection: { a: { b: "$x", c: 1 } } })[0])).toBe(
      '{"_id":1,"a":[{"c":1,"b":9},[{"c":2,"b":9}]]}',
    );
  });
});
