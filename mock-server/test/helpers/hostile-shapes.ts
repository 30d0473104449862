/**
 * Request shapes an attacker sends to hold the server (issue 26): values built from shared
 * references that double with each step, then compared, hashed, grouped, copied or sent back;
 * nested builders; deep `$let`; huge group keys; crafted hash collisions; sorts of large values;
 * replies and documents past 16 MiB; slow evaluations. Used by test/data/hostile-evaluation.test.ts
 * (against a listening server, on both stores) and test/data/query-shapes.test.ts (the engine's
 * exact error for each, deterministically).
 */

/** A value that doubles with each of `n` steps, all of it shared references. */
export const doubling = (n: number, initialValue: unknown = "x") => ({
  $reduce: { input: { $range: [0, n] }, initialValue, in: ["$$value", "$$value"] },
});

/** ~10^10 additions: hours without a deadline, and no memory to speak of. */
export const slowExpr = {
  $gt: [
    {
      $reduce: {
        input: { $range: [0, 100_000] },
        initialValue: 0,
        in: {
          $add: [
            "$$value",
            { $reduce: { input: { $range: [0, 100_000] }, initialValue: 0, in: { $add: ["$$value", 1] } } },
          ],
        },
      },
    },
    0,
  ],
};

/** 2^blocks documents that mingo's 32-bit FNV-style hash gives one hash, built by the query itself. */
export function collidingDocuments(blocks: number) {
  const hash = (text: string) => {
    let h = 0;
    for (let i = 0; i < text.length; i++) h = (h * 16777619) ^ text.charCodeAt(i);
    return h >>> 0;
  };
  // Two strings of equal hash: any concatenation of them, block by block, collides with any other.
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; !pair; i++) {
    const text = i.toString(36).padStart(4, "0");
    const before = seen.get(hash(text));
    if (before !== undefined && before !== text) pair = [before, text];
    else seen.set(hash(text), text);
  }
  const bit = (b: number) => ({ $mod: [{ $floor: { $divide: ["$$this", 2 ** b] } }, 2] });
  return {
    $map: {
      input: { $range: [0, 2 ** blocks] },
      in: {
        s: {
          $concat: Array.from({ length: blocks }, (_, b) => ({ $cond: [{ $eq: [bit(b), 0] }, pair![0], pair![1]] })),
        },
      },
    },
  };
}

/** What a shape is refused with when nothing is slow: the memory ceiling, the time limit, or a size cap. */
export type Refusal = "memory" | "time" | "reply" | "document";

export interface Shape {
  label: string;
  action: "aggregate" | "find" | "updateOne";
  argument: Record<string, unknown>;
  refusal: Refusal;
}

const project = (expression: unknown) => ({ pipeline: [{ $project: { x: expression } }] });

export const shapes: Shape[] = [
  // The issue's: a 200-byte request doubling 26 times.
  {
    label: "$eq of two doubled values",
    action: "aggregate",
    argument: project({ $eq: [doubling(26), doubling(26)] }),
    refusal: "memory",
  },
  {
    label: "$setUnion of a doubled value",
    action: "aggregate",
    argument: project({ $size: { $setUnion: [doubling(26), []] } }),
    refusal: "memory",
  },
  { label: "the doubled value itself", action: "aggregate", argument: project(doubling(26)), refusal: "memory" },
  {
    label: "$expr of a find",
    action: "find",
    argument: { query: { $expr: { $eq: [doubling(26), doubling(26)] } } },
    refusal: "memory",
  },
  {
    label: "nested $reduce with $concatArrays",
    action: "aggregate",
    argument: project({
      $reduce: { input: { $range: [0, 40] }, initialValue: [[1]], in: { $concatArrays: ["$$value", "$$value"] } },
    }),
    refusal: "memory",
  },
  {
    label: "$map of doubled values",
    action: "aggregate",
    argument: project({ $size: { $map: { input: { $range: [0, 100] }, in: doubling(22) } } }),
    refusal: "memory",
  },
  {
    label: "$zip doubling",
    action: "aggregate",
    argument: project({
      $reduce: { input: { $range: [0, 40] }, initialValue: [1], in: { $zip: { inputs: ["$$value", "$$value"] } } },
    }),
    refusal: "memory",
  },
  {
    label: "doubling inside one $reduce, compared each step",
    action: "aggregate",
    argument: project({
      $reduce: {
        input: { $range: [0, 40] },
        initialValue: { a: [1], b: [1], same: true },
        in: { a: ["$$value.a", "$$value.a"], b: ["$$value.b", "$$value.b"], same: { $eq: ["$$value.a", "$$value.b"] } },
      },
    }),
    refusal: "memory",
  },
  {
    label: "deep $let, each level doubling",
    action: "aggregate",
    argument: project({
      $let: {
        vars: { v: ["x"] },
        in: Array.from({ length: 40 }).reduce<unknown>(
          (inner) => ({ $let: { vars: { v: ["$$v", "$$v"] }, in: inner } }),
          { $size: { $setUnion: ["$$v", []] } },
        ),
      },
    }),
    refusal: "memory",
  },
  {
    label: "a doubled $group key",
    action: "aggregate",
    argument: { pipeline: [{ $group: { _id: doubling(26) } }] },
    refusal: "memory",
  },
  {
    label: "a $group key of many copies of a large value",
    action: "aggregate",
    argument: {
      pipeline: [
        { $addFields: { big: { $map: { input: { $range: [0, 100_000] }, in: "$$this" } } } },
        { $group: { _id: Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`k${i}`, "$big"])) } },
      ],
    },
    refusal: "memory",
  },
  {
    label: "stages nesting $$ROOT in itself",
    action: "aggregate",
    argument: {
      pipeline: [
        ...Array.from({ length: 40 }, () => ({ $project: { _id: 0, a: "$$ROOT", b: "$$ROOT" } })),
        { $group: { _id: "$$ROOT" } },
      ],
    },
    refusal: "memory",
  },
  {
    label: "a slow evaluation (10^10 additions)",
    action: "find",
    argument: { query: { $expr: slowExpr } },
    refusal: "time",
  },
  {
    label: "$sortArray of a large array of arrays",
    action: "aggregate",
    argument: project({
      $size: {
        $sortArray: {
          input: { $map: { input: { $range: [0, 200_000] }, in: [{ $mod: ["$$this", 7] }, "$$this"] } },
          sortBy: 1,
        },
      },
    }),
    refusal: "time",
  },
  {
    label: "a $sort stage over large keys",
    action: "aggregate",
    argument: {
      pipeline: [
        { $project: { k: { $map: { input: { $range: [0, 200_000] }, in: ["$$this"] } } } },
        { $unwind: "$k" },
        { $sort: { k: 1 } },
        { $count: "n" },
      ],
    },
    refusal: "time",
  },
  {
    label: "crafted hash collisions in a set",
    action: "aggregate",
    argument: project({ $size: { $setUnion: [collidingDocuments(16), []] } }),
    refusal: "time",
  },
  {
    label: "a reply past 16 MiB",
    action: "aggregate",
    argument: { pipeline: [{ $limit: 1 }, { $replaceWith: { x: doubling(21) } }] },
    refusal: "reply",
  },
  {
    label: "an update doubling a field",
    action: "updateOne",
    argument: { query: {}, update: [{ $set: { x: doubling(26) } }] },
    refusal: "memory",
  },
  {
    label: "an update making a document past 16 MiB",
    action: "updateOne",
    argument: { query: {}, update: [{ $set: { x: doubling(21) } }] },
    refusal: "document",
  },
];

export const refusals: Record<Refusal, RegExp> = {
  memory: /used too much memory and cannot spill to disk\. Memory limit: 104857600 bytes$/,
  time: /^operation exceeded time limit$/,
  reply: /^BSONObj size: \d+ \(0x[0-9A-F]+\) is invalid\. Size must be between 0 and 16793600\(16MB\)$/,
  document: /^Resulting document after update is larger than 16777216$/,
};
