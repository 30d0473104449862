/**
 * `Journal.record`, the path every finished request takes: entries kept as bytes outside the heap
 * (state/journal.ts says why). They must read back exactly as the same entries kept as objects
 * (`add`) do, through the ring's wrap-arounds, the byte log's segments, listings in between,
 * `clear()`, and texts the byte form cannot hold (those fall back to objects). A record's bytes are
 * never moved (moving them was the in-memory store's `find` tail), and the log holds little more
 * than its live records.
 */
import { describe, expect, it } from "vitest";
import { Journal, type JournalEntry, journaledBodyLimit } from "../../src/state/journal.ts";
import { seeded } from "../helpers/seeded.ts";

interface Recorded {
  id: string;
  method: string;
  path: string;
  operationId: string;
  status: number;
  durationMs: number;
  faulted: boolean;
  atMs: number;
  bodyText: string | undefined;
  reply: unknown;
}

/** Records into the journal under test, and the same entry through `add` into the reference. */
function both(journal: Journal, reference: Journal, r: Recorded): void {
  journal.record(r.id, r.method, r.path, r.operationId, r.status, r.durationMs, r.faulted, r.atMs, r.bodyText, r.reply);
  const entry: JournalEntry = {
    id: r.id,
    time: "",
    method: r.method,
    path: r.path,
    operationId: r.operationId,
    status: r.status,
    durationMs: r.durationMs,
    faulted: r.faulted,
  };
  reference.add(entry, r.reply, r.atMs, r.bodyText);
}

const slotsOf = (journal: Journal) => (journal as unknown as { entries: unknown[] }).entries;
const segmentsOf = (journal: Journal) =>
  [...(journal as unknown as { segments: Map<number, { bytes: Buffer }> }).segments.values()].map((s) => s.bytes);
const bytesOf = (journal: Journal) => Buffer.concat(segmentsOf(journal));

describe("Journal.record", () => {
  it("reads back what add() would, through wrap-arounds, segments and listings between", () => {
    const random = seeded(14);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
    const texts = ["", "a", "é", "日本語", "emoji 😀", "x".repeat(3000), 'quote " and \\ backslash'];
    const replies = [
      undefined,
      "",
      "OK",
      '{"$numberDouble":"3.5"}',
      '{"error":"invalid session","error_code":"InvalidSession","link":"é"}',
      '{"access_token":"secret","user_id":"u"}',
      Buffer.from('{"from":"a buffer"}'),
      `{"filler":"${"é".repeat(journaledBodyLimit)}"}`,
      "text with\u0000NUL inside",
    ];
    for (const capacity of [1, 2, 7, 64]) {
      const journal = new Journal(capacity);
      const reference = new Journal(capacity);
      for (let n = 0; n < 3000; n++) {
        const body = random() < 0.5 ? undefined : JSON.stringify({ name: pick(texts), arguments: [n] });
        both(journal, reference, {
          id: `r-${n.toString(36)}`,
          method: pick(["GET", "POST", "DELETE"]),
          path: `/api/client/v2.0/app/a/${pick(texts)}?q=${n}`,
          operationId: pick(["callFunction", "getProfile", "login"]),
          status: pick([200, 201, 204, 400, 401, 404, 500]),
          durationMs: Math.round(random() * 100_000) / 100,
          faulted: random() < 0.1,
          atMs: 1_764_000_000_000 + n + random(),
          bodyText: body,
          reply: pick(replies),
        });
        // (Now and then: a listing reads every slot, which then holds no bytes to move.)
        if (n % 700 === 699) expect(journal.list()).toEqual(reference.list());
      }
      expect(journal.list()).toEqual(reference.list());
      expect(journal.list({ search: "invalidsession", limit: 3 })).toEqual(
        reference.list({ search: "invalidsession", limit: 3 }),
      );
    }
  });

  it("keeps a request as bytes, not as objects of the heap", () => {
    const journal = new Journal(3);
    const body = '{"name":"sum","arguments":[{"$numberInt":"1"}]}';
    journal.record("r-1", "POST", "/x", "callFunction", 200, 0.25, false, 5, body, '{"$numberInt":"2"}');
    expect(slotsOf(journal)).toEqual([null]);
    expect(bytesOf(journal).toString()).toContain(body);
    expect(journal.list()).toEqual([
      {
        id: "r-1",
        time: new Date(5).toISOString(),
        method: "POST",
        path: "/x",
        operationId: "callFunction",
        status: 200,
        durationMs: 0.25,
        faulted: false,
        requestBody: { name: "sum", arguments: [{ $numberInt: "1" }] },
        responseBody: { $numberInt: "2" },
      },
    ]);
  });

  it("falls back to objects for a buffer reply and for a NUL before the reply", () => {
    const journal = new Journal(4);
    journal.record("r-1", "POST", "/x", "sendEmail", 200, 1, false, 0, undefined, Buffer.from("OK"));
    journal.record("r-2", "GET", "/a\u0000b", "getProfile", 200, 1, true, 0, undefined, undefined);
    expect(slotsOf(journal).every((slot) => slot !== null)).toBe(true);
    expect(journal.list()).toMatchObject([
      { id: "r-1", responseBody: "OK" },
      { id: "r-2", path: "/a\u0000b", faulted: true },
    ]);
  });

  it("never moves a record's bytes, and holds its live records and at most three segments more", () => {
    const journal = new Journal(5000);
    const reply = JSON.stringify(Array.from({ length: 100 }, (_, n) => ({ title: `Note ${n}`, n })));
    const record = (n: number) =>
      journal.record(`r-${n}`, "POST", "/call", "callFunction", 200, 1, false, n, undefined, reply);
    record(0);
    const [first] = segmentsOf(journal);
    const firstBytes = Buffer.from(bytesOf(journal).subarray(0, Buffer.byteLength(reply)));
    for (let n = 1; n < 4999; n++) record(n);
    // r-0 is still live: its segment is the same buffer, its bytes where they were.
    expect(segmentsOf(journal)[0]).toBe(first);
    expect(first!.subarray(0, firstBytes.length).equals(firstBytes)).toBe(true);
    for (let n = 4999; n < 30_000; n++) {
      record(n);
      const live = 5000 * Buffer.byteLength(reply);
      if (n % 997 === 0) expect(journal.heldBytes).toBeLessThanOrEqual(live + 3 * Math.max(live / 4, 1024 * 1024));
    }
    // r-0 died long ago, and its segment with it.
    expect(segmentsOf(journal)).not.toContain(first);
    expect(journal.list().map((e) => e.id)).toEqual(Array.from({ length: 5000 }, (_, k) => `r-${25_000 + k}`));
  });

  it("gives bytes back once the live records shrink, and starts over after clear", () => {
    const journal = new Journal(40);
    const large = "x".repeat(15_000);
    for (let n = 0; n < 40; n++) journal.record(`r-${n}`, "GET", "/", "getProfile", 200, 1, false, 0, undefined, large);
    const grown = journal.heldBytes;
    expect(grown).toBeGreaterThanOrEqual(40 * 15_000);
    for (let n = 40; n < 120_000; n++)
      journal.record(`r-${n}`, "GET", "/", "getProfile", 200, 1, false, 0, undefined, "");
    expect(journal.heldBytes).toBeLessThanOrEqual(3 * 64 * 1024);
    expect(journal.list().map((e) => e.id)).toEqual(Array.from({ length: 40 }, (_, k) => `r-${119_960 + k}`));
    journal.clear();
    expect(journal.heldBytes).toBe(0);
    expect(journal.list()).toEqual([]);
    journal.record("r-a", "GET", "/", "getProfile", 200, 1, false, 0, undefined, "OK");
    expect(journal.list()).toMatchObject([{ id: "r-a", responseBody: "OK" }]);
  });
});
