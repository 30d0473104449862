/**
 * The memory store keeps the newest confirmation and reset tokens of each app (a long
 * `npm start --data-dir` does not gather them without end); a dropped one answers as unknown.
 */
import { describe, expect, it } from "vitest";
import { MemoryAuthTokens } from "../../src/store/memory/auth-tokens.ts";
import type { StoredAuthToken } from "../../src/store/store.ts";

const token = (n: number): StoredAuthToken => ({
  tokenId: `id-${n}`,
  token: `secret-${n}`,
  kind: "confirm",
  email: `u${n}@example.com`,
  used: false,
  createdAt: 0,
  expiresAt: 10_000,
});

describe("memory tokens", () => {
  it("keep the newest, the oldest going first; a dropped link answers as unknown", async () => {
    const tokens = new MemoryAuthTokens(3);
    for (let n = 1; n <= 4; n++) await tokens.add(token(n));
    expect(tokens.listNow({}).map((t) => t.tokenId)).toEqual(["id-2", "id-3", "id-4"]);
    expect(await tokens.check("confirm", "secret-1", "id-1", 0)).toEqual({ ok: false, reason: "unknown" });
    expect((await tokens.consume("confirm", "secret-4", "id-4", 0)).ok).toBe(true);
  });
});
