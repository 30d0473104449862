/**
 * `$setWindowFields` outputs refused as MongoDB's parser refuses them, over no documents too
 * (window-spec.ts), and windows computed as MongoDB computes them where mingo's went wrong: range
 * windows over a dotted or Decimal128 sort field, bounds written as Longs, Decimal128s or constant
 * expressions, an empty `window` (window-stage.ts). Texts and values from MongoDB's
 * window_function_expression, window_bounds, window_function_shift and jstests
 * aggregation/sources/setWindowFields.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON } from "../../src/data/documents.ts";
import { aggregate, checkAggregation } from "../../src/data/query-engine.ts";
import { plainNumbers } from "../helpers/plain-numbers.ts";

/** The stage over `docs` (none by default): its outputs' values, or its refusal's text. */
function run(stage: unknown, docs: unknown[] = []): unknown {
  const pipeline = [fromEJSON({ $setWindowFields: stage }) as Document];
  try {
    checkAggregation(pipeline);
    return plainNumbers(
      aggregate(
        docs.map((doc) => fromEJSON(doc) as Document),
        pipeline,
      ),
      ["$numberInt", "$numberDouble"],
    );
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const sum = (window: unknown, sortBy: unknown = { t: 1 }) => ({
  ...(sortBy === null ? {} : { sortBy }),
  output: { s: { $sum: "$y", window } },
});
const values = (out: unknown) => (out as Document[]).map((doc) => doc.s);

describe("window bounds", () => {
  it("are refused out of order, of the wrong kind or without the sort they need", () => {
    expect(run(sum({ documents: [1, -1] }))).toBe("ERR Lower bound must not exceed upper bound: [1, -1]");
    expect(run(sum({ documents: ["current", -1] }))).toBe("ERR Lower bound must not exceed upper bound: [0, -1]");
    expect(run(sum({ range: [2, 1] }))).toBe("ERR Lower bound must not exceed upper bound: [2, 1]");
    expect(run(sum({ documents: [1.5, 2] }))).toBe("ERR Numeric document-based bounds must be an integer");
    expect(run(sum({ documents: ["x", 1] }))).toBe("ERR Window bounds must be 'unbounded', 'current', or a number.");
    expect(run(sum({ documents: [-1, 1] }, null))).toBe("ERR Document-based bounds require a sortBy");
    expect(run(sum({ range: [-1, 1] }, { t: 1, u: 1 }))).toBe("ERR Range-based bounds require sortBy a single field");
    expect(run(sum({ range: [-1.5, 1], unit: "day" }))).toBe("ERR With 'unit', range-based bounds must be an integer");
    expect(run(sum({ range: [-1, 1], unit: "fortnight" }))).toBe("ERR unknown time unit value: fortnight");
    expect(run(sum({ documents: [-1, 1], unit: "day" }))).toBe(
      "ERR Window bounds can only specify 'unit' with range-based bounds.",
    );
    expect(run(sum({ range: [null, 1] }))).toBe("ERR Range-based bounds expression must be a number");
    expect(run(sum({ documents: [true, 1] }))).toBe("ERR Numeric document-based bounds must be an integer");
    expect(run(sum({ documents: [{ $add: ["$t", 1] }, 1] }))).toBe("ERR Window bounds expression must be a constant.");
    expect(run(sum({ documents: [-2147483649, 0] }))).toBe("ERR Numeric document-based bounds must be an integer");
    expect(run(sum({ unit: "day" }))).toBe("ERR Window bounds can only specify 'unit' with range-based bounds.");
    expect(run(sum({ range: [-1, 1], foo: 1 }))).toBe(
      "ERR 'window' field that specifies range cannot have other fields besides 'unit'",
    );
    expect(run(sum({ documents: [-1, 1], foo: 1 }))).toBe(
      "ERR 'window' field that specifies documents cannot have other fields",
    );
    expect(run(sum({ foo: 1 }))).toBe(
      "ERR 'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field",
    );
  });

  it("take 'unbounded' anywhere, constant expressions, Longs and Decimal128s, and an empty window", () => {
    const docs = [1, 2, 3].map((t) => ({ _id: t, t, y: t }));
    expect(values(run(sum({ documents: ["current", "unbounded"] }), docs))).toEqual([6, 5, 3]);
    expect(values(run(sum({ documents: [{ $add: [-1, 0] }, 3] }), docs))).toEqual([6, 6, 5]);
    expect(values(run(sum({ range: [{ $numberLong: "-1" }, { $numberDecimal: "1" }] }), docs))).toEqual([3, 6, 5]);
    expect(values(run(sum({}), docs))).toEqual([6, 6, 6]);
  });
});

describe("range windows", () => {
  it("read a dotted sort field at its path, and Decimal128 values as numbers", () => {
    const dotted = [1, 2, 4].map((b) => ({ _id: b, a: { b }, y: b }));
    expect(values(run(sum({ range: [-1, 0] }, { "a.b": 1 }), dotted))).toEqual([1, 3, 4]);
    const decimals = [
      { _id: 1, t: { $numberDecimal: "1" }, y: 1 },
      { _id: 2, t: { $numberDecimal: "2.5" }, y: 2 },
      { _id: 3, t: 3, y: 3 },
      { _id: 4, t: { $numberDecimal: "9" }, y: 4 },
    ];
    expect(values(run(sum({ range: [-1.5, 0] }), decimals))).toEqual([1, 3, 5, 4]);
  });

  it("refuse sort values that are no numbers, or no dates with a unit, as they meet them", () => {
    expect(run(sum({ range: [-1, 1] }), [{ _id: 1, t: "a", y: 1 }])).toBe(
      "ERR Invalid range: Expected the sortBy field to be a number, but it was string",
    );
    expect(run(sum({ range: [-1, 1] }), [{ _id: 1, t: { $date: "2024-01-01T00:00:00Z" }, y: 1 }])).toBe(
      "ERR Invalid range: For windows that involve date or time ranges, a unit must be provided.",
    );
    expect(run(sum({ range: [-1, 1], unit: "day" }), [{ _id: 1, t: 5, y: 1 }])).toBe(
      "ERR Invalid range: Expected the sortBy field to be a Date, but it was int",
    );
  });
});

describe("window functions' arguments", () => {
  const output = (spec: unknown, sortBy: unknown = { t: 1 }) => ({
    ...(sortBy === null ? {} : { sortBy }),
    output: { o: spec },
  });

  it("$rank, $denseRank and $documentNumber take {} and one sort field", () => {
    expect(run(output({ $rank: "$t" }))).toBe("ERR $rank must be specified with '{}' as the value");
    expect(run(output({ $documentNumber: {}, window: { documents: [-1, 0] } }))).toBe(
      "ERR Rank style window functions take no other arguments",
    );
    expect(run(output({ $denseRank: {} }, { t: 1, u: 1 }))).toBe(
      "ERR $denseRank must be specified with a top level sortBy expression with exactly one element",
    );
  });

  it("$shift needs an output, an integer `by`, a constant default and a sort", () => {
    expect(run(output({ $shift: { by: 1 } }))).toBe("ERR $shift requires an 'output' expression.");
    const docs = [1, 2].map((t) => ({ _id: t, t, y: t * 10 }));
    expect(
      (run(output({ $shift: { output: "$y", by: { $numberDecimal: "1" } } }), docs) as Document[]).map((d) => d.o),
    ).toEqual([20, null]);
    expect(run(output({ $shift: { output: "$y" } }))).toBe("ERR $shift requires 'by' as an integer value.");
    expect(run(output({ $shift: { output: "$y", by: 1.5 } }))).toBe(
      "ERR '$shift:by' field must be an integer, but found  by: 1.5",
    );
    expect(run(output({ $shift: { output: "$y", by: 1, default: "$y" } }))).toBe(
      "ERR '$shift:default' expression must yield a constant value.",
    );
    expect(run(output({ $shift: { output: "$y", by: 1 } }, null))).toBe("ERR '$shift' requires a sortBy");
    expect(run(output({ $shift: { output: "$y", by: 1 }, window: { documents: [0, 1] } }))).toBe(
      "ERR $shift does not accept a 'window' field",
    );
  });

  it("$expMovingAvg takes an input and one of N (a positive integer) or alpha (between 0 and 1, a Decimal128 too), with a sort", () => {
    const shape =
      "$expMovingAvg sub object must have exactly two fields: An 'input' field, and either an 'N' field or an 'alpha' field";
    expect(run(output({ $expMovingAvg: { input: "$y", N: 2, alpha: 0.5 } }))).toBe(`ERR ${shape}`);
    expect(run(output({ $expMovingAvg: { input: "$y", N: 2 } }, null))).toBe(
      "ERR $expMovingAvg requires an explicit 'sortBy'",
    );
    expect(run(output({ $expMovingAvg: { input: "$y", N: 1.5 } }))).toBe(
      "ERR 'N' field must be an integer, but found  N: 1.5. To use a non-integer, use the 'alpha' argument instead",
    );
    expect(run(output({ $expMovingAvg: { input: "$y", N: 0 } }))).toBe("ERR 'N' must be greater than zero. Got 0");
    const prices = [10, 20].map((y, t) => ({ _id: t, t, y }));
    const ema = (smoothing: Document) =>
      (run(output({ $expMovingAvg: { input: "$y", ...smoothing } }), prices) as Document[]).map((doc) => doc.o);
    expect(ema({ alpha: { $numberDecimal: "0.5" } })).toEqual([10, 15]);
    expect(ema({ N: { $numberLong: "3" } })).toEqual([10, 15]);
    expect(run(output({ $expMovingAvg: { input: "$y", alpha: 1 } }))).toBe(
      "ERR 'alpha' must be between 0 and 1 (exclusive), found alpha: 1",
    );
  });

  it("$derivative and $integral take a unit of a week or less, one sort field, and $derivative a window", () => {
    const derivative = (arg: unknown, window?: unknown, sortBy?: unknown) =>
      run(output({ $derivative: arg, ...(window ? { window } : {}) }, sortBy));
    expect(derivative({ input: "$y", unit: "month" }, { documents: [-1, 0] })).toBe(
      "ERR unit must be 'week' or smaller",
    );
    expect(derivative({ input: "$y" })).toBe("ERR $derivative requires explicit window bounds");
    expect(derivative({ input: "$y" }, { documents: [-1, 0] }, { t: 1, u: 1 })).toBe(
      "ERR $derivative requires a non-compound sortBy",
    );
    expect(run(output({ $integral: { input: "$y", x: 1 } }))).toBe("ERR $integral got unexpected argument: x");
    expect(run(output({ $integral: { unit: "day" } }))).toBe("ERR $integral requires an 'input' expression");
  });
});

// window_function_exec_derivative.cpp and window_function_integral.cpp: what each computes over
// its window, and the sort and input values each refuses as it meets them.
describe("$derivative and $integral over their windows", () => {
  const at = (seconds: number) => ({ $date: new Date(Date.UTC(2024, 0, 1, 0, 0, seconds)).toISOString() });
  const points = (ts: unknown[], ys: unknown[]) => ts.map((t, i) => ({ _id: i, t, y: ys[i] }));
  const over = (
    fn: "$derivative" | "$integral",
    arg: Document,
    docs: unknown[],
    window: unknown = { documents: [-1, 0] },
  ) => {
    const out = run({ sortBy: { t: 1 }, output: { s: { [fn]: { input: "$y", ...arg }, window } } }, docs);
    return typeof out === "string" ? out : values(out);
  };

  it("compute rise over run and the trapezoids' area, in the unit's time with dates", () => {
    expect(over("$derivative", {}, points([0, 2, 3], [1, 5, 5]))).toEqual([null, 2, 0]);
    expect(over("$integral", {}, points([0, 2, 3], [1, 5, 5]))).toEqual([0, 6, 5]);
    expect(over("$integral", {}, points([0, 2, 3], [1, 5, 5]), { documents: ["unbounded", "current"] })).toEqual([
      0, 6, 11,
    ]);
    const dates = points([at(0), at(2)], [0, 10]);
    expect(over("$derivative", { unit: "second" }, dates)).toEqual([null, 5]);
    expect(over("$derivative", { unit: "millisecond" }, dates)).toEqual([null, 0.005]);
    expect(over("$integral", { unit: "second" }, dates)).toEqual([0, 10]);
    // A window with no documents gives null.
    expect(over("$integral", {}, points([0, 10], [1, 2]), { range: [1, 2] })).toEqual([null, null]);
  });

  it("refuse a unit over numbers, dates without a unit, and sort values that are neither", () => {
    expect(over("$derivative", { unit: "second" }, points([0, 1], [1, 2]))).toBe(
      "ERR $derivative with 'unit' expects the sortBy field to be a Date",
    );
    expect(over("$derivative", {}, points([at(0), at(1)], [1, 2]))).toBe(
      "ERR $derivative where the sortBy is a Date requires an 'unit'",
    );
    expect(over("$derivative", {}, points(["a", "b"], [1, 2]))).toBe(
      "ERR $derivative (with no 'unit') expects the sortBy field to be numeric",
    );
    expect(over("$integral", { unit: "second" }, points([0, 1], [1, 2]))).toBe(
      "ERR $integral with 'unit' expects the sortBy field to be a Date",
    );
    expect(over("$integral", {}, points([at(0), at(1)], [1, 2]))).toBe(
      "ERR $integral (with no 'unit') expects the sortBy field to be numeric",
    );
  });

  it("refuse an input that is null, missing or no number, where mingo counted it as 0", () => {
    expect(over("$derivative", {}, points([0, 1, 2], [1, 2, null]))).toBe(
      "ERR $derivative input must not be null or missing",
    );
    expect(
      over("$derivative", {}, [
        { _id: 0, t: 0, y: 1 },
        { _id: 1, t: 1 },
      ]),
    ).toBe("ERR $derivative input must not be null or missing");
    const integralType =
      "ERR The input value of $integral window function must be a vector of 2 value, the first value must be numeric or date type and the second must be numeric.";
    expect(over("$integral", {}, points([0, 1, 2], [1, 2, null]))).toBe(integralType);
    expect(over("$integral", {}, points([0, 1], [1, "2"]))).toBe(integralType);
    expect(over("$integral", {}, points([0, "b"], [1, 2]))).toBe(integralType);
  });

  it("keep Decimal128 exact, and give NaN where a value is NaN", () => {
    expect(
      over("$integral", {}, points([0, 1], [{ $numberDecimal: "0.1" }, { $numberDecimal: "0.2" }]), {
        documents: ["unbounded", "current"],
      }),
    ).toEqual([0, { $numberDecimal: "0.15" }]);
    expect(over("$integral", {}, points([0, 1, 2], [1, { $numberDouble: "NaN" }, 2]))).toEqual([
      0,
      Number.NaN,
      Number.NaN,
    ]);
  });
});
