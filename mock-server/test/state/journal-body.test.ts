/** What the journal keeps of request bodies: redacted copies of small ones, a size note for large ones. */
import { describe, expect, it } from "vitest";
import { Journal, type JournalEntry, journalBody, journaledBodyLimit, keptAsText } from "../../src/state/journal.ts";

/** An entry of a function call as the plugins record it (its time written when the journal is read). */
const callEntry = (id: string): JournalEntry => ({
  id,
  time: "",
  method: "POST",
  path: "/x",
  operationId: "callFunction",
  status: 200,
  durationMs: 1,
  faulted: false,
});

describe("journalBody", () => {
  it("keeps a small body, with secrets redacted", () => {
    expect(journalBody({ username: "a@example.com", password: "secret" }, "50")).toEqual({
      username: "a@example.com",
      password: "[redacted]",
    });
  });

  it("notes the size of a body over the limit, from Content-Length", () => {
    expect(journalBody({ filler: "x" }, String(journaledBodyLimit + 1))).toBe(
      `[a body of ${journaledBodyLimit + 1} bytes, not kept]`,
    );
  });

  it("measures a body sent without Content-Length (chunked)", () => {
    const body = { filler: "é".repeat(journaledBodyLimit) };
    const bytes = Buffer.byteLength(JSON.stringify(body));
    expect(journalBody(body, undefined)).toBe(`[a body of ${bytes} bytes, not kept]`);
    expect(journalBody({ small: "yes" }, undefined)).toEqual({ small: "yes" });
    expect(journalBody("plain text", undefined)).toBe("plain text");
  });
});

describe("keptAsText", () => {
  /** What the journal keeps of a body sent as JSON: its text, or what journalBody makes of it. */
  const kept = (body: unknown, text = JSON.stringify(body), contentLength = String(Buffer.byteLength(text))) =>
    keptAsText(text, contentLength) ? text : journalBody(body, contentLength);

  it("keeps the text of a small body that names no secret", () => {
    expect(kept({ name: "sum", arguments: [{ $numberInt: "1" }] })).toBe(
      '{"name":"sum","arguments":[{"$numberInt":"1"}]}',
    );
  });

  it("redacts at once a body that names a secret, as a key or as a value, or holds an escape", () => {
    expect(kept({ username: "a", password: "p" })).toEqual({ username: "a", password: "[redacted]" });
    expect(kept({ nested: [{ refresh_token: "t" }] })).toEqual({ nested: [{ refresh_token: "[redacted]" }] });
    // A value that looks like a secret's name is not one, but the body is copied to be safe.
    expect(kept({ field: "token" })).toEqual({ field: "token" });
    expect(kept({ password: "p" }, '{"pass\\u0077ord":"p"}', "22")).toEqual({ password: "[redacted]" });
  });

  it("notes the size of a body over the limit instead of keeping it", () => {
    const body = { filler: "é".repeat(journaledBodyLimit / 2) };
    const text = JSON.stringify(body);
    expect(keptAsText(text, undefined)).toBe(false);
    expect(journalBody(body, undefined)).toBe(`[a body of ${Buffer.byteLength(text)} bytes, not kept]`);
  });

  it("is read back parsed and redacted like any body (nesting past 20 levels included)", () => {
    const journal = new Journal(2);
    let deep: unknown = "leaf";
    for (let i = 0; i < 25; i++) deep = [deep];
    journal.add(callEntry("t"), undefined, 0, JSON.stringify({ deep }));
    // The same as a body redacted when it was journaled: 20 levels kept, the rest redacted.
    const eager = journalBody({ deep }, "10");
    expect(JSON.stringify(eager)).toBe(`{"deep":${"[".repeat(20)}"[redacted]"${"]".repeat(20)}}`);
    expect(journal.list()[0]?.requestBody).toEqual(eager);
  });
});

describe("Journal replies", () => {
  const entry = (id: string) => ({
    id,
    time: new Date(0).toISOString(),
    method: "POST",
    path: "/x",
    operationId: "login",
    status: 401,
    durationMs: 1,
    faulted: false,
  });

  it("keeps a reply as sent and reads it (parsed, redacted, its error_code) when the journal is listed", () => {
    const journal = new Journal(3);
    journal.add(entry("a"), Buffer.from('{"error":"invalid password","error_code":"InvalidPassword"}'));
    journal.add(entry("b"), '{"access_token":"secret-token","user_id":"u1"}');
    journal.add(entry("c"));
    journal.add(entry("d"), "OK");
    const listed = journal.list();
    expect(listed.map((e) => e.id)).toEqual(["b", "c", "d"]);
    expect(listed[0]).toMatchObject({ responseBody: { access_token: "[redacted]", user_id: "u1" } });
    expect(listed[0]).not.toHaveProperty("errorCode");
    expect(listed[1]).not.toHaveProperty("responseBody");
    expect(listed[2]).toMatchObject({ responseBody: "OK" });
    // A time given as a number is written when the journal is read.
    const timed = new Journal(1);
    timed.add({ ...entry("t"), time: "" }, undefined, Date.UTC(2026, 10, 24, 9, 0, 0, 5));
    expect(timed.list()).toMatchObject([{ id: "t", time: "2026-11-24T09:00:00.005Z" }]);
    // Read once: a second listing shows the same entries.
    expect(journal.list()).toEqual(listed);
    expect(journal.list({ search: "invalidpassword" })).toEqual([]);
    const errors = new Journal(2);
    errors.add(entry("e"), '{"error":"invalid password","error_code":"InvalidPassword"}');
    expect(errors.list({ search: "invalidpassword" })).toMatchObject([{ id: "e", errorCode: "InvalidPassword" }]);
  });
});

describe("Journal replies over the size limit", () => {
  it("keep only their note from the moment they are added (5,000 large replies are not held until read)", () => {
    const journal = new Journal(2);
    const large = `{"filler":"${"é".repeat(journaledBodyLimit)}"}`;
    journal.add(callEntry("big"), large, 0);
    const slot = (journal as unknown as { entries: { reply: unknown }[] }).entries[0]!;
    expect(slot.reply).toBe(`[a body of ${Buffer.byteLength(large)} bytes, not kept]`);
    expect(journal.list()[0]).toMatchObject({
      responseBody: `[a body of ${Buffer.byteLength(large)} bytes, not kept]`,
    });
  });
});
