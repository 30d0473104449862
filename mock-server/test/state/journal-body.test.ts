/** What the journal keeps of request bodies: redacted copies of small ones, a size note for large ones. */
import { describe, expect, it } from "vitest";
import { journalBody, journaledBodyLimit } from "../../src/state/journal.ts";

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
