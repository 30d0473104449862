/** Change events stamped once by the store (change-events.ts): cluster times as MongoDB's oplog gives them. */
import { describe, expect, it } from "vitest";
import { changeDocument, stampEvents } from "../../src/data/change-events.ts";
import type { ChangeEvent } from "../../src/data/documents.ts";

const change = (n: number): ChangeEvent => ({
  database: "db",
  collection: "c",
  operationType: "insert",
  documentKey: { _id: n },
  fullDocument: { _id: n },
});

describe("stamped change events", () => {
  it("give a transaction's events one cluster time and single writes one each, every token its own", () => {
    const transaction = [change(1), change(2), change(3)];
    stampEvents(transaction, true, Date.UTC(2026, 0, 1));
    const times = transaction.map((event) => JSON.stringify(changeDocument(event, 0, 0).clusterTime));
    expect(new Set(times).size).toBe(1);
    const singles = [change(4), change(5)];
    stampEvents(singles, false, Date.UTC(2026, 0, 1));
    const later = singles.map((event) => changeDocument(event, 0, 0));
    expect(later.map((event) => JSON.stringify(event.clusterTime))).not.toContain(times[0]);
    expect(later[0]!.clusterTime).not.toEqual(later[1]!.clusterTime);
    const tokens = [...transaction, ...singles].map(
      (event) => (changeDocument(event, 0, 0)._id as { _data: string })._data,
    );
    expect(new Set(tokens).size).toBe(5);
    expect(tokens.every((token) => /^82[0-9A-F]+$/.test(token))).toBe(true);
    expect(changeDocument(singles[0]!, 0, 0).wallTime).toEqual(new Date(Date.UTC(2026, 0, 1)));
  });
});
