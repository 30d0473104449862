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

  it("with fallback secrets, signs with its own and accepts theirs, saying which verified", () => {
    const old = new Hs256Key("the-old-signing-secret-0123456789");
    const next = new Hs256Key("the-new-signing-secret-0123456789");
    const rotated = new Hs256Key("the-new-signing-secret-0123456789", [
      "the-old-signing-secret-0123456789",
      "an-older-signing-secret-0123456789",
    ]);
    const fromOld = old.sign({ sub: "u1" });
    const fromOlder = new Hs256Key("an-older-signing-secret-0123456789").sign({ sub: "u2" });
    expect(rotated.verify(fromOld)).toEqual({ ok: true, payload: { sub: "u1" }, fallback: true });
    expect(rotated.verify(fromOld)).toEqual({ ok: true, payload: { sub: "u1" }, fallback: true });
    expect(rotated.verify(fromOlder)).toEqual({ ok: true, payload: { sub: "u2" }, fallback: true });
    // Its own tokens are the new secret's: accepted by a key of that secret alone, not the old one's.
    const fromRotated = rotated.sign({ sub: "u3" });
    expect(rotated.verify(fromRotated)).toEqual({ ok: true, payload: { sub: "u3" }, fallback: false });
    expect(next.verify(fromRotated)).toMatchObject({ ok: true });
    expect(old.verify(fromRotated)).toEqual({ ok: false, reason: "signature" });
    // A token of none of them, or a fallback's signature over another payload, is refused.
    expect(rotated.verify(new Hs256Key("someone-elses-secret-0123456789").sign({ sub: "u1" }))).toEqual({
      ok: false,
      reason: "signature",
    });
    const [header, , signature] = fromOld.split(".");
    const otherPayload = Buffer.from(JSON.stringify({ sub: "admin" })).toString("base64url");
    expect(rotated.verify(`${header}.${otherPayload}.${signature}`)).toEqual({ ok: false, reason: "signature" });
  });

  it("calls a token without three parts malformed", () => {
    for (const bad of ["", "a.b", "a.b.c.d", ".b.c"])
      expect(key.verify(bad)).toEqual({ ok: false, reason: "malformed" });
  });
});
