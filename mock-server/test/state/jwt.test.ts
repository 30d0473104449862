/** HS256 tokens: what verifies, what does not, and the memory of verified tokens never vouches for another token. */
import { describe, expect, it } from "vitest";
import { Hs256Key } from "../../src/state/jwt.ts";

const key = new Hs256Key("a-signing-secret-of-some-length-0123456789");

describe("Hs256Key", () => {
  it("verifies its own tokens, again and again, and refuses another key's", () => {
    const token = key.sign({ sub: "u1", typ: "access" });
    expect(key.verify(token)).toMatchObject({ ok: true, payload: { sub: "u1", typ: "access" } });
    expect(key.verify(token)).toMatchObject({ ok: true, payload: { sub: "u1" } });
    expect(new Hs256Key("another-secret-0123456789-0123456789").verify(token)).toEqual({
      ok: false,
      reason: "signature",
    });
  });

  it("refuses a token that reuses a remembered signature with another payload or header", () => {
    const token = key.sign({ sub: "u1", typ: "access" });
    expect(key.verify(token).ok).toBe(true);
    const [header, , signature] = token.split(".");
    const otherPayload = Buffer.from(JSON.stringify({ sub: "admin", typ: "access" })).toString("base64url");
    expect(key.verify(`${header}.${otherPayload}.${signature}`)).toEqual({ ok: false, reason: "signature" });
    const noneHeader = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url");
    expect(key.verify(`${noneHeader}.${token.split(".")[1]}.${signature}`)).toEqual({ ok: false, reason: "signature" });
    // The genuine token still verifies afterwards.
    expect(key.verify(token).ok).toBe(true);
  });

  it("calls a token without three parts malformed", () => {
    for (const bad of ["", "a.b", "a.b.c.d", ".b.c"])
      expect(key.verify(bad)).toEqual({ ok: false, reason: "malformed" });
  });
});
