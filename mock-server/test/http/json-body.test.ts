/**
 * The JSON body parser (http/json-body.ts): a large body is parsed a slice at a time, giving other
 * requests turns in between, into exactly what JSON.parse gives; its refusals are the small path's.
 */
import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  JsonBodyError,
  parseJsonBody,
  parseJsonBodyInSlices,
  sliceChars,
  slicedFrom,
} from "../../src/http/json-body.ts";

const notes = (n: number) => Array.from({ length: n }, (_, i) => ({ n: i, title: `Note ${i}`, done: i % 2 === 0 }));

/** Large texts of the shapes a client sends, each past the size parsed in one step. */
const shapes: Record<string, string> = {
  "an array of documents": JSON.stringify({ name: "f", arguments: [notes(10_000)] }),
  "a document of many fields": JSON.stringify(Object.fromEntries(notes(10_000).map((note) => [`k${note.n}`, note]))),
  "one long string": JSON.stringify({ arguments: [{ s: "x".repeat(slicedFrom * 2) }] }),
  "nested large containers": JSON.stringify({ a: { b: [notes(5_000), { c: notes(5_000) }] }, d: [[notes(3_000)]] }),
  "escapes and pairs across slices": JSON.stringify({ s: 'é\\"😀\n\u2028'.repeat(slicedFrom / 4), t: ["😀"] }),
  "brackets, quotes and backslashes inside strings": JSON.stringify({
    s: '[{"\\}]'.repeat(slicedFrom / 4),
    t: ["\\".repeat(slicedFrom), "]]]", "{{{"],
  }),
  "numbers and literals": JSON.stringify([Array.from({ length: 10_000 }, (_, i) => [i / 7, -i, null, true, false])]),
  "duplicate keys": `{"a":1,"pad":${JSON.stringify(notes(10_000))},"b":2,"a":3}`,
  "an object of 200,000 keys": JSON.stringify({
    filter: Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`k${i}`, { $exists: false }])),
  }),
  "large containers under keys that come back first or again": `{"b":1,"0":${JSON.stringify(notes(8_000))},"a":[1],"c":2,"a":${JSON.stringify(notes(8_000))},"1":{"d":${JSON.stringify(notes(8_000))}}}`,
  "whitespace around values": ` \n{ "x" : [ ${notes(10_000)
    .map((n) => JSON.stringify(n))
    .join(" ,\n ")} ] , "y" : 1 }\n `,
};

async function refusal(text: string): Promise<JsonBodyError> {
  const error = await parseJsonBodyInSlices(text).then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(JsonBodyError);
  return error as JsonBodyError;
}

/** An array spanning several slices. */
const big = JSON.stringify(notes(8_000));

/** A large text with `inner` placed past the first slices. */
const past = (inner: string) => `{"pad":${JSON.stringify(notes(8_000))},"v":${inner}}`;

describe("a large body, parsed in slices", () => {
  it.each(Object.entries(shapes))("gives what JSON.parse gives: %s", async (_, text) => {
    expect(text.length).toBeGreaterThan(slicedFrom);
    const parsed = await parseJsonBodyInSlices(text);
    expect(parsed).toStrictEqual(JSON.parse(text));
    // Key order too (a reply writes fields in the order they came).
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse(text)));
  });

  it("gives what JSON.parse gives wherever a slice boundary falls in an escape or a pair", async () => {
    for (let shift = 0; shift < 12; shift++) {
      const text = `{"p":"${"a".repeat(sliceChars - 6 + shift)}","s":"\\\\\\"\\u00e9😀\\n","t":"${"b".repeat(slicedFrom)}"}`;
      expect(await parseJsonBodyInSlices(text)).toStrictEqual(JSON.parse(text));
    }
  });

  it("reads a lone surrogate's escape as U+FFFD, in the one-step parse and in slices, keys too", async () => {
    const half = { "k\ud800": ["\udc00", "😀", "\\ud800"], s: "x\ud83d" };
    const read = { "k\ufffd": ["\ufffd", "😀", "\\ud800"], s: "x\ufffd" };
    expect(parseJsonBody(JSON.stringify(half))).toStrictEqual(read);
    // Past the first slices, in members read together and in a container built of its own.
    const text = past(JSON.stringify([half, { pad: notes(3_000), half }]));
    expect(text.length).toBeGreaterThan(slicedFrom);
    const parsed = (await parseJsonBodyInSlices(text)) as { v: unknown };
    expect(parsed.v).toStrictEqual([read, { pad: notes(3_000), half: read }]);
  });

  it("gives what JSON.parse gives for generated shapes, wherever the slices fall", async () => {
    // A seeded generator (mulberry32) of nested containers large and small, whitespace anywhere.
    for (let seed = 1; seed <= 6; seed++) {
      let state = seed;
      const random = () => {
        state = (state + 0x6d2b79f5) | 0;
        let t = Math.imul(state ^ (state >>> 15), 1 | state);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      const space = () => [" ", "", "\n ", ""][Math.floor(random() * 4)]!;
      const value = (depth: number, budget: number): string => {
        const pick = random();
        if (depth > 6 || budget < 40 || pick < 0.3)
          return [JSON.stringify(`s${pick}`), String(Math.floor(pick * 1e6) / 7), "true", "null", "[]", "{}"][
            Math.floor(random() * 6)
          ]!;
        const n = 1 + Math.floor(random() * 60);
        const parts = Array.from({ length: n }, () => value(depth + 1, budget / n));
        const keyed = random() < 0.5;
        const members = parts.map((part, i) =>
          keyed ? `${space()}"${random() < 0.2 ? i % 3 : `k${i}`}"${space()}:${space()}${part}` : `${space()}${part}`,
        );
        return keyed ? `{${members.join(",")}${space()}}` : `[${members.join(",")}${space()}]`;
      };
      let text = "";
      while (text.length < slicedFrom) text = value(0, 3e6);
      expect(JSON.stringify(await parseJsonBodyInSlices(text))).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  it("lets other work run between its slices", async () => {
    const text = shapes["an array of documents"]!;
    let turns = 0;
    let parsing = true;
    const counting = (async () => {
      while (parsing) {
        await nextTurn();
        turns++;
      }
    })();
    await parseJsonBodyInSlices(text);
    parsing = false;
    await counting;
    // One turn at least between any two slices.
    expect(turns).toBeGreaterThanOrEqual(Math.floor(text.length / sliceChars) - 1);
  });

  it("refuses what the one-step parse refuses, with the same codes", async () => {
    for (const bad of [
      past("[1,2,]"),
      past("[1,,2]"),
      past("{"),
      past('"open'),
      `${past("1")} trailing`,
      `${past("1")}}`,
      past("[1}"),
      past('{"a":1]'),
      past("1").slice(0, -1),
      `${past("1").slice(0, -1)}  `,
      past("tru"),
      // Around containers that span slices:
      past(`[${big},]`),
      past(`[${big} ${big}]`),
      past(`[${big} 1]`),
      past(`[,${big}]`),
      past(`[1,,${big}]`),
      past(`{"a":${big} "b":1}`),
      past(`{"a" ${big}}`),
      past(`{1:${big}}`),
      past(`{"a":1,:${big}}`),
      past(`{"a":${big},}`),
      past(`[${big}}`),
      `${big} ${big}`,
      big.slice(0, -1),
    ]) {
      expect((await refusal(bad)).code).toBe("JSON_SYNTAX");
      expect(() => parseJsonBody(bad)).toThrow(JsonBodyError);
    }
    const deep = past(`${"[".repeat(200)}${"]".repeat(200)}`);
    expect((await refusal(deep)).code).toBe("JSON_TOO_DEEP");
    expect((await refusal(deep)).message).toBe("the JSON body is nested deeper than 128 levels");
  });

  it("refuses prototype keys, however spelled, and leaves every prototype alone", async () => {
    for (const bad of [
      past('{"__proto__":{"admin":true}}'),
      past('[{"a":1},{"\\u005f_proto__":{"admin":true}}]'),
      past('{"\\u005F\\u005Fproto\\u005f\\u005f" :{"admin":true}}'),
      `{"__proto__":{"admin":true},"pad":${JSON.stringify(notes(8_000))}}`,
      past('{"constructor":{"prototype":{"admin":true}}}'),
    ]) {
      expect((await refusal(bad)).code).toBe("JSON_FORBIDDEN_KEY");
    }
    expect(({} as { admin?: boolean }).admin).toBeUndefined();
  });

  it("keeps fields named like prototype keys where they are harmless", async () => {
    for (const fine of [
      past('{"constructor":"Ford","model":"T"}'),
      past('{"note":"a \\"__proto__\\": key in a string","s":"__proto__"}'),
      past('{"constructor":{"name":"x"}}'),
      past('{"__PROTO__":1,"proto":2}'),
    ]) {
      const parsed = await parseJsonBodyInSlices(fine);
      // (Compared as text: toStrictEqual compares objects' `constructor`, here a field.)
      expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse(fine)));
      expect(Object.getPrototypeOf((parsed as { v: object }).v)).toBe(Object.prototype);
    }
  });
});
