/**
 * The variable names a pipeline may define, as MongoDB refuses them (variable-names.ts): `$let`'s
 * `vars`, `$map`'s and `$filter`'s `as`, `$lookup`'s `let`.
 */
import { Timestamp } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { aggregate, checkAggregation } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";

const docs = [fromEJSON({ _id: 1, arr: [1, 2, 3] }) as Document];

/** The stage's answer over the document, or its refusal's text. */
function run(pipeline: unknown[]): unknown {
  try {
    checkAggregation(pipeline as Document[]);
    return plainNumbers(aggregate(docs, pipeline as Document[]));
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const project = (expr: unknown) => run([{ $project: { _id: 0, v: expr } }]);

describe("variable names", () => {
  it("refuses names MongoDB refuses in $let, $map and $filter, in its words", () => {
    expect(project({ $let: { vars: { Total: 1 }, in: "$$Total" } })).toBe(
      "ERR 'Total' starts with an invalid character for a user variable name",
    );
    expect(project({ $let: { vars: { _x: 1 }, in: 1 } })).toBe(
      "ERR '_x' starts with an invalid character for a user variable name",
    );
    expect(project({ $let: { vars: { "sub-id": 1 }, in: 1 } })).toBe(
      "ERR 'sub-id' contains an invalid character for a variable name: '-'",
    );
    expect(project({ $let: { vars: { "": 1 }, in: 1 } })).toBe("ERR empty variable names are not allowed");
    expect(project({ $map: { input: "$arr", as: "Item", in: "$$Item" } })).toBe(
      "ERR 'Item' starts with an invalid character for a user variable name",
    );
    expect(project({ $filter: { input: "$arr", as: "a.b", cond: true } })).toBe(
      "ERR 'a.b' contains an invalid character for a variable name: '.'",
    );
  });

  it("refuses a read of a name no variable could have before looking it up (validateNameForUserRead)", () => {
    expect(project("$$_underbar")).toBe("ERR '_underbar' starts with an invalid character for a user variable name");
    expect(project("$$with spaces.x")).toBe("ERR 'with spaces' contains an invalid character for a variable name: ' '");
    expect(project("$$9lives")).toBe("ERR '9lives' starts with an invalid character for a user variable name");
    // A readable name that nothing defines: let.js's 17276.
    expect(project("$$FOO")).toBe("ERR Use of undefined variable: FOO");
    expect(project({ $let: { vars: { var1: "$arr", var2: "$$var1" }, in: "$$var1" } })).toBe(
      "ERR Use of undefined variable: var1",
    );
  });

  it("takes the names MongoDB takes", () => {
    expect(
      project({ $let: { vars: { total_2: 2, xY: 3, é: 4 }, in: { $add: ["$$total_2", "$$xY", "$$é"] } } }),
    ).toEqual([{ v: 9 }]);
    expect(project({ $map: { input: "$arr", as: "item", in: { $multiply: ["$$item", 2] } } })).toEqual([
      { v: [2, 4, 6] },
    ]);
    expect(project({ $filter: { input: "$arr", as: "n", cond: { $gt: ["$$n", 1] } } })).toEqual([{ v: [2, 3] }]);
  });

  it("reads $$CLUSTER_TIME, a replica set's (as Atlas's): a Timestamp of $$NOW's second, one for the statement", () => {
    const before = Math.floor(Date.now() / 1000);
    const two = [fromEJSON({ _id: 1 }), fromEJSON({ _id: 2 })] as Document[];
    const got = aggregate(two, [
      { $project: { t: "$$CLUSTER_TIME", now: "$$NOW", kind: { $type: "$$CLUSTER_TIME" } } },
    ]);
    const after = Math.floor(Date.now() / 1000);
    const [first, second] = got as { t: Timestamp; now: Date; kind: string }[];
    expect(first!.t).toBeInstanceOf(Timestamp);
    expect(first!.kind).toBe("timestamp");
    expect(first!.t.high).toBe(Math.floor(first!.now.getTime() / 1000));
    expect(first!.t.high).toBeGreaterThanOrEqual(before);
    expect(first!.t.high).toBeLessThanOrEqual(after);
    expect(second!.t.equals(first!.t)).toBe(true);
    expect(
      project({ $let: { vars: { t: "$$CLUSTER_TIME" }, in: { $gt: ["$$t", new Timestamp({ t: 0, i: 0 })] } } }),
    ).toEqual([{ v: true }]);
  });

  it("reads one $$NOW for the whole statement, as MongoDB does, at every stage and document", () => {
    const many = Array.from({ length: 5_000 }, (_, i) => fromEJSON({ _id: i }) as Document);
    for (const stage of [
      { $addFields: { now: "$$NOW" } },
      { $set: { now: "$$NOW" } },
      { $project: { now: "$$NOW" } },
    ]) {
      const times = aggregate(many, [stage, { $group: { _id: "$now" } }]);
      expect(times, JSON.stringify(stage)).toHaveLength(1);
    }
  });

  it("keeps a $lookup's let variables and the statement's $$NOW inside a $facet of its pipeline", () => {
    const joined = [fromEJSON({ _id: 9 }) as Document];
    const [doc] = aggregate(
      docs,
      [
        {
          $lookup: {
            from: "other",
            let: { x: "$_id" },
            pipeline: [{ $facet: { f: [{ $project: { _id: 0, x: "$$x", now: "$$NOW" } }] } }],
            as: "j",
          },
        },
        { $project: { _id: 0, j: 1, now: "$$NOW" } },
      ],
      { collectionResolver: () => joined },
    ) as { j: { f: { x: number; now: Date }[] }[]; now: Date }[];
    const [inner] = doc!.j[0]!.f;
    expect(inner!.x).toBe(1);
    expect(inner!.now.getTime()).toBe(doc!.now.getTime());
  });

  it("refuses $lookup's let names MongoDB refuses, as it parses the stage", () => {
    const lookup = (letSpec: Document) => [
      { $lookup: { from: "c", let: letSpec, pipeline: [{ $match: { $expr: true } }], as: "joined" } },
    ];
    const refusal = (letSpec: Document) => {
      try {
        checkAggregation(lookup(letSpec) as Document[]);
        return "checked";
      } catch (error) {
        return `ERR ${(error as Error).message}`;
      }
    };
    expect(refusal({ owner: "$_id", ownerId2: 1 })).toBe("checked");
    expect(refusal({ Owner: "$_id" })).toBe("ERR 'Owner' starts with an invalid character for a user variable name");
    expect(refusal({ "owner id": "$_id" })).toBe(
      "ERR 'owner id' contains an invalid character for a variable name: ' '",
    );
  });
});
