/**
 * `$densify` (densify-stage.ts) with the answers of MongoDB's densify tests (partitions.js,
 * doc_on_bound.js, decimal.js, parse_util.js) and of MongoDB's date arithmetic.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { freezeTree } from "../../src/data/ejson-text.ts";
import { aggregate } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";
import { stageRefusal } from "../helpers/stage-refusal.ts";

const stored = (values: unknown[]) =>
  values.map((value) => {
    const doc = fromEJSON(value) as Document;
    freezeTree(doc);
    return doc;
  });
/** The pipeline's documents as JSON texts (canonical Extended JSON, numbers unwrapped), sorted. */
function densified(docs: unknown[], spec: Document, sortBy?: Document): string[] {
  const pipeline: Document[] = [{ $project: { _id: 0 } }, { $densify: spec }, ...(sortBy ? [{ $sort: sortBy }] : [])];
  const out = plainNumbers(aggregate(stored(docs), pipeline), ["$numberInt", "$numberDouble"]) as unknown[];
  const texts = out.map((doc) => JSON.stringify(doc));
  return sortBy ? texts : texts.sort();
}
const texts = (docs: unknown[]) => docs.map((doc) => JSON.stringify(doc)).sort();
const day = (iso: string) => ({ $date: `${iso}T00:00:00Z` });
/** A day as canonical Extended JSON writes it. */
const canonicalDay = (iso: string) => ({ $date: { $numberLong: String(Date.parse(`${iso}T00:00:00Z`)) } });

describe("$densify", () => {
  it("fills each partition over its own range, the full range, or explicit bounds past its last document", () => {
    const two = [
      { val: 0, partition: 0 },
      { val: 2, partition: 0 },
      { val: 0, partition: 1 },
      { val: 2, partition: 1 },
    ];
    expect(
      densified(two, { field: "val", partitionByFields: ["partition"], range: { step: 1, bounds: "partition" } }),
    ).toEqual(texts([...two, { val: 1, partition: 0 }, { val: 1, partition: 1 }]));
    // partitions.js fullTestTwo: every partition from the smallest value of all to the largest.
    const full = densified(
      [
        { val: 0, part: 0 },
        { val: 0, part: 1 },
        { val: 10, part: 2 },
      ],
      { field: "val", range: { step: 2, bounds: "full" }, partitionByFields: ["part"] },
    );
    expect(full).toEqual(texts([0, 2, 4, 6, 8, 10].flatMap((val) => [0, 1, 2].map((part) => ({ val, part })))));
    // rangeTestThree: an upper bound off the step, partitions lacking the whole range.
    expect(
      densified(
        [
          { val: 0, partition: 0 },
          { val: 10, partition: 1 },
        ],
        { field: "val", partitionByFields: ["partition"], range: { step: 2, bounds: [2, 5] } },
      ),
    ).toEqual(
      texts([
        { val: 0, partition: 0 },
        { val: 10, partition: 1 },
        { val: 2, partition: 0 },
        { val: 2, partition: 1 },
        { val: 4, partition: 0 },
        { val: 4, partition: 1 },
      ]),
    );
    // Steps counted from the range's start whatever lies between (fullTestThree's off-step 5).
    expect(
      densified([{ val: 0 }, { val: 5 }, { val: 8 }], { field: "val", range: { step: 2, bounds: "full" } }),
    ).toEqual(texts([0, 2, 4, 5, 6, 8].map((val) => ({ val }))));
  });

  it("fills explicit bounds over no documents, past the last one, and passes null and missing through", () => {
    expect(densified([], { field: "a", range: { step: 1, bounds: [0, 3] } })).toEqual(
      texts([{ a: 0 }, { a: 1 }, { a: 2 }]),
    );
    expect(densified([{ a: 1 }], { field: "a", range: { step: 1, bounds: [0, 5] } })).toEqual(
      texts([0, 1, 2, 3, 4].map((a) => ({ a }))),
    );
    expect(
      densified([{ a: 3 }, { a: null, k: 1 }, { k: 2 }, { a: 0 }], { field: "a", range: { step: 1, bounds: "full" } }),
    ).toEqual(texts([{ a: 0 }, { a: 1 }, { a: 2 }, { a: 3 }, { a: null, k: 1 }, { k: 2 }]));
    // A dotted field is made as a sub-document.
    expect(densified([{ m: { v: 0 } }, { m: { v: 2 } }], { field: "m.v", range: { step: 1, bounds: "full" } })).toEqual(
      texts([{ m: { v: 0 } }, { m: { v: 1 } }, { m: { v: 2 } }]),
    );
  });

  it("steps dates by calendar units as $dateAdd does, and Decimal128 values as Decimal128s", () => {
    expect(
      densified([{ t: day("2024-01-31") }, { t: day("2024-05-01") }], {
        field: "t",
        range: { step: 1, unit: "month", bounds: "full" },
      }),
    ).toEqual(
      texts(
        ["2024-01-31", "2024-02-29", "2024-03-29", "2024-04-29", "2024-05-01"].map((d) => ({ t: canonicalDay(d) })),
      ),
    );
    // doc_on_bound.js: documents on and off the bounds, explicit date bounds.
    const times = ["2023-09-12T00:00:00Z", "2023-09-13T00:00:00Z", "2023-09-13T00:00:10Z", "2023-09-14T00:00:00Z"];
    const onBound = densified(
      times.map((t) => ({ time: { $date: t } })),
      {
        field: "time",
        range: { step: 12, unit: "hour", bounds: [new Date("2023-09-13T00:00:00Z"), new Date("2023-09-15T00:00:00Z")] },
      },
      { time: 1 },
    );
    expect(
      onBound
        .map((doc) => JSON.parse(doc).time.$date.$numberLong)
        .map((ms: string) => new Date(Number(ms)).toISOString()),
    ).toEqual([
      "2023-09-12T00:00:00.000Z",
      "2023-09-13T00:00:00.000Z",
      "2023-09-13T00:00:10.000Z",
      "2023-09-13T12:00:00.000Z",
      "2023-09-14T00:00:00.000Z",
      "2023-09-14T12:00:00.000Z",
    ]);
    expect(
      densified([{ val: { $numberDecimal: "0" } }, { val: { $numberDecimal: "3" } }], {
        field: "val",
        range: { step: 1, bounds: "full" },
      }),
    ).toEqual(texts(["0", "1", "2", "3"].map((n) => ({ val: { $numberDecimal: n } }))));
  });

  it("refuses values that are no number or date, and stops past 500,000 made documents", () => {
    const refusal = (docs: unknown[], spec: Document) => {
      try {
        densified(docs, spec);
        return "accepted";
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(refusal([{ a: 3 }, { a: "x" }], { field: "a", range: { step: 1, bounds: "full" } })).toBe(
      "Densify field type must be numeric or a date",
    );
    expect(refusal([{ a: 0 }, { a: 1e6 }], { field: "a", range: { step: 1, bounds: "full" } })).toBe(
      "Generated 500001 documents in $densify, which is over the limit of 500000. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents",
    );
  });

  it("refuses the specifications MongoDB refuses, with its texts", () => {
    const refusal = (spec: unknown) => stageRefusal("$densify", spec);
    const date = (iso: string) => new Date(iso);
    expect(refusal({ field: "a", range: { step: 1, bounds: "full" } })).toBe("accepted");
    expect(refusal({ field: "a", range: { step: 1 } })).toBe(
      "BSON field '$densify.range.bounds' is missing but a required field",
    );
    expect(refusal({ range: { step: 1, bounds: "full" } })).toBe(
      "BSON field '$densify.field' is missing but a required field",
    );
    expect(refusal({ field: 1, range: { step: 1, bounds: "full" } })).toBe(
      "BSON field '$densify.field' is the wrong type 'int', expected type 'string'",
    );
    expect(refusal({ field: "a", partitionByFields: ["a.b"], range: { step: 1, bounds: "full" } })).toBe(
      "BSON field '$densify.partitionByFields' contains the field that is being densified",
    );
    expect(refusal({ field: "a", range: { step: -1, bounds: [0, 1] } })).toBe(
      "the step parameter in a range statement must be a strictly positive numeric value",
    );
    expect(refusal({ field: "a", range: { step: 1, bounds: [0, 1, 2] } })).toBe(
      "a bounding array in a range statement must have exactly two elements",
    );
    expect(refusal({ field: "$a", range: { step: 1, bounds: [0, 1] } })).toBe(
      "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
    );
    expect(refusal({ field: "a", range: { step: 1, bounds: "partition" } })).toBe(
      "one may not specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.",
    );
    expect(refusal({ field: "a", range: { step: 1, bounds: [1, 2], unit: "second" } })).toBe(
      "numeric bounds may not have unit parameter",
    );
    expect(refusal({ field: "a", range: { step: 1, bounds: [1, date("2020-01-01")] } })).toBe(
      "a bounding array must contain either both dates or both numeric types",
    );
    expect(
      refusal({ field: "a", range: { step: 1.1, bounds: [date("2020-01-01"), date("2020-01-03")], unit: "second" } }),
    ).toBe("The step parameter in a range satement must be a whole number when densifying a date range");
  });
});
