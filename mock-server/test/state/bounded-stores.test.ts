/**
 * The journal and the mail outbox keep a bounded history: the newest entries, oldest first, with
 * filters and limits working across the point where old entries are dropped (dropping one is
 * constant time: the benchmark found a whole-array shift on every request once they were full).
 */
import { describe, expect, it } from "vitest";
import { Journal, type JournalEntry } from "../../src/state/journal.ts";
import { MemoryMail } from "../../src/store/memory/mail.ts";

const entry = (n: number): JournalEntry => ({
  id: `r-${n}`,
  time: new Date(0).toISOString(),
  method: "GET",
  path: "/",
  operationId: n % 2 ? "getProfile" : "login",
  status: n % 3 ? 200 : 401,
  durationMs: 1,
  faulted: false,
});

describe("Journal", () => {
  it("keeps the newest entries in order once full, through many wrap-arounds", () => {
    const journal = new Journal(5);
    for (let n = 1; n <= 23; n++) journal.add(entry(n));
    expect(journal.list().map((e) => e.id)).toEqual(["r-19", "r-20", "r-21", "r-22", "r-23"]);
    expect(journal.list({ limit: 2 }).map((e) => e.id)).toEqual(["r-22", "r-23"]);
    expect(journal.list({ operationId: "getProfile" }).map((e) => e.id)).toEqual(["r-19", "r-21", "r-23"]);
    expect(journal.list({ status: 401 }).map((e) => e.id)).toEqual(["r-21"]);
  });

  it("starts over after clear, and list() returns a copy", () => {
    const journal = new Journal(3);
    for (let n = 1; n <= 7; n++) journal.add(entry(n));
    const listed = journal.list();
    listed.pop();
    expect(journal.list()).toHaveLength(3);
    journal.clear();
    expect(journal.list()).toEqual([]);
    journal.add(entry(8));
    journal.add(entry(9));
    expect(journal.list().map((e) => e.id)).toEqual(["r-8", "r-9"]);
  });
});

describe("the in-memory mail store", () => {
  const mail = (n: number, appId: string) => ({
    source: "app-services" as const,
    appId,
    kind: "confirm",
    to: `user${n}@example.com`,
    from: "no-reply@example.com",
    subject: `message ${n}`,
    html: "",
    text: "",
    createdAtMs: n,
  });

  it("keeps exactly its capacity, newest last, across compactions", async () => {
    const outbox = new MemoryMail(1500);
    for (let n = 1; n <= 5000; n++) await outbox.add(mail(n, n % 2 ? "a" : "b"), false);
    expect(outbox.size).toBe(1500);
    const all = await outbox.list();
    expect(all).toHaveLength(1500);
    expect(all[0]!.subject).toBe("message 3501");
    expect(all.at(-1)!.subject).toBe("message 5000");
    expect(await outbox.get("m-3500")).toBeUndefined();
    expect((await outbox.get("m-3501"))?.subject).toBe("message 3501");
    expect(await outbox.count({ appId: "a" })).toBe(750);
    expect(await outbox.list({ since: "m-4990" })).toHaveLength(10);
  });

  it("drops while adding between reads, and clears by filter", async () => {
    const outbox = new MemoryMail(10);
    for (let n = 1; n <= 25; n++) {
      await outbox.add(mail(n, n % 2 ? "a" : "b"), false);
      expect(outbox.size).toBe(Math.min(n, 10));
    }
    await outbox.clear({ appId: "a" });
    expect((await outbox.list()).map((m) => m.subject)).toEqual([16, 18, 20, 22, 24].map((n) => `message ${n}`));
    expect(outbox.exportMessages()).toHaveLength(5);
  });
});
