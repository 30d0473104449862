/**
 * Many rows' writes go to PostgreSQL in statements of bounded size (store/postgres/documents.ts
 * `statementParts`): the driver writes each statement's arrays in one synchronous step.
 */
import { expect, it } from "vitest";
import { statementLimits, statementParts } from "../../src/store/postgres/documents.ts";
import { jsonParam } from "../../src/store/postgres/text-encoding.ts";

const covers = (parts: [number, number][], length: number) => {
  expect(parts.map(([from]) => from)).toEqual([0, ...parts.slice(0, -1).map(([, to]) => to)]);
  expect(parts.at(-1)?.[1] ?? 0).toBe(length);
  for (const [from, to] of parts) expect(to).toBeGreaterThan(from);
};

it("splits by rows and by characters, in order, covering every item once", () => {
  expect(statementParts([])).toEqual([]);
  const keys = Array.from({ length: 2_500 }, (_, i) => `k${i}`);
  const byRows = statementParts(keys);
  covers(byRows, keys.length);
  expect(byRows.map(([from, to]) => to - from)).toEqual([statementLimits.rows, statementLimits.rows, 500]);

  const texts = Array.from({ length: 900 }, (_, i) => jsonParam(`{"_id":${i},"t":"${"x".repeat(4_000)}"}`));
  const byChars = statementParts(texts);
  covers(byChars, texts.length);
  expect(byChars.length).toBeGreaterThan(3);
  for (const [from, to] of byChars) {
    const chars = texts.slice(from, to).reduce((sum, t) => sum + t.json.length, 0);
    expect(chars).toBeLessThanOrEqual(statementLimits.chars);
  }
});

it("gives a document larger than a statement's characters a statement of its own", () => {
  const huge = jsonParam(`"${"x".repeat(statementLimits.chars * 2)}"`);
  const parts = statementParts([jsonParam("{}"), huge, jsonParam("{}")]);
  expect(parts).toEqual([
    [0, 1],
    [1, 2],
    [2, 3],
  ]);
});
