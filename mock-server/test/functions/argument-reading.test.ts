/**
 * A function's arguments are read in its process as the bson library reads them (relaxed), with
 * shortcuts for the common texts (no Extended JSON types; only `$numberInt`/`$numberDouble`): the
 * function sees exactly the values the library would give, but an Int64 past 2^53 a Long (the
 * library's relaxed reading rounds it), or the call fails with the library's message (or, for
 * number strings and dates it reads as numbers and invalid dates, MongoDB's).
 * Checked by echoing generated arguments back as canonical Extended JSON, given as their text or
 * (a large request's way) as a request body holding them.
 */
import { Double, EJSON, Long } from "bson";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { badNumberString, longNumberString } from "../../src/data/documents.ts";
import { strictFormMarkers, strictFormProblem } from "../../src/data/strict-forms.ts";
import type { FunctionSource } from "../../src/functions/function-folder.ts";
import { BadArguments } from "../../src/functions/sandbox.ts";
import { testSandbox } from "../helpers/sandbox.ts";

const sandbox = testSandbox("argument-reading");

const echo: FunctionSource = {
  name: "echo",
  source: "exports = (...args) => args;",
  private: false,
  runAsSystem: false,
  origin: "config",
  version: "test:echo",
};

/** What the function process answers for an arguments text (or a body): its echo, or the refusal's message. */
async function echoed(argsText: string, argsInBody = false): Promise<string> {
  const { result } = sandbox.run({
    fn: echo,
    argsText,
    argsInBody,
    callText: '{"user":{},"request":{}}',
    deadline: Date.now() + 10_000,
  });
  try {
    return await result;
  } catch (error) {
    if (error instanceof BadArguments) return `refused: ${error.message}`;
    throw error;
  }
}

/** Whether a value the library read holds a date it made invalid (`{"$date": "soon"}`). */
const holdsInvalidDate = (value: unknown): boolean =>
  value instanceof Date
    ? Number.isNaN(value.getTime())
    : Array.isArray(value)
      ? value.some(holdsInvalidDate)
      : value !== null &&
        typeof value === "object" &&
        Object.getPrototypeOf(value) === Object.prototype &&
        Object.values(value).some(holdsInvalidDate);

/**
 * A value as the function process writes it: the library's canonical Extended JSON, but each
 * integer past 2^53 with its exact digits (the library writes JavaScript's shortest) and 2^63, past
 * Int64's range, as a double.
 */
function written(value: unknown): string {
  const exact = (v: unknown): unknown => {
    if (typeof v === "number")
      return !Number.isInteger(v) || Number.isSafeInteger(v) || Math.abs(v) > 2 ** 63
        ? v
        : v === 2 ** 63
          ? new Double(v)
          : BigInt(v);
    if (Array.isArray(v)) return v.map(exact);
    if (v !== null && typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v))
        Object.defineProperty(out, k, {
          value: exact((v as Record<string, unknown>)[k]),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return out;
    }
    return v;
  };
  return EJSON.stringify(exact(value) as never, { relaxed: false });
}

/**
 * What the library makes of the same text; MongoDB refuses number strings that are not integers or
 * past their type's range, the forms the service's reader refuses (data/strict-forms.ts), and
 * invalid dates.
 */
function expected(argsText: string): string {
  const bad = badNumberString.exec(argsText);
  const badProblem = bad && strictFormProblem({ [`$number${bad[1]}`]: JSON.parse(`"${bad[2]}"`) });
  if (badProblem) return `refused: ${badProblem}`;
  for (const [, kind, digits] of argsText.matchAll(longNumberString)) {
    const refusal = strictFormProblem({ [`$number${kind}`]: digits });
    if (refusal !== null) return `refused: ${refusal}`;
  }
  if (strictFormMarkers.test(argsText)) {
    const problem = strictFormProblem(JSON.parse(argsText));
    if (problem !== null) return `refused: ${problem}`;
  }
  try {
    const value: unknown = libraryRead(argsText);
    if (holdsInvalidDate(value)) return "refused: $date is not a valid date";
    return written(value);
  } catch (error) {
    return `refused: ${(error as Error).message}`;
  }
}

/** The library's relaxed reading, its Int64s (read as BigInts) numbers within 2^53, Longs past it; its own refusals. */
function libraryRead(text: string): unknown {
  // (A text that can hold no Int64 past 2^53 — none of 16 digits or more, no escape that could
  // spell its key — is the library's relaxed reading as it is: its BigInt reading differs for
  // forms it refuses otherwise, `{"$numberLong": -0}`.)
  if (!/"\$numberLong"\s*:\s*"[+-]?\d{16,}"/.test(text) && !text.includes("\\u"))
    return EJSON.parse(text, { relaxed: true });
  let read: unknown;
  try {
    read = EJSON.parse(text, { relaxed: true, useBigInt64: true });
  } catch (error) {
    EJSON.parse(text, { relaxed: true });
    throw error;
  }
  return longsExact(read);
}

/** The library's relaxed values with its Int64s (read as BigInts) numbers within 2^53, Longs past it. */
function longsExact(value: unknown): unknown {
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : Long.fromBigInt(value);
  if (Array.isArray(value)) return value.map(longsExact);
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const k of Object.keys(value))
      (value as Record<string, unknown>)[k] = longsExact((value as Record<string, unknown>)[k]);
  }
  return value;
}

const numberString = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  fc.double().map(String),
  fc.constantFrom(
    "",
    " 12",
    "12 ",
    "0x1F",
    "1e3",
    "-0",
    "+5",
    "NaN",
    "Infinity",
    "-Infinity",
    "1.5abc",
    "9".repeat(30),
    "٣",
  ),
);
const key = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.constantFrom(
    "$numberInt",
    "$numberDouble",
    "$numberLong",
    "$oid",
    "$date",
    "$undefined",
    "$regex",
    "$foo",
    "__proto__",
    "a\u0000b",
  ),
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.oneof(fc.string({ maxLength: 8 }), fc.double(), fc.integer(), fc.boolean(), fc.constant(null), fc.constant(-0)),
    fc.record({ $numberInt: numberString }),
    fc.record({ $numberDouble: numberString }),
    fc.record({ $numberInt: fc.oneof(fc.integer(), fc.constant(null)) }),
    fc.record({ $numberLong: numberString }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(key, tie("value"), { maxKeys: 4 }),
  ),
}));

/** JSON text of generated values, written by hand so that -0 and odd keys survive as written. */
function text(v: unknown): string {
  if (typeof v === "number") return Object.is(v, -0) ? "-0" : Number.isFinite(v) ? JSON.stringify(v) : "1e400";
  if (Array.isArray(v)) return `[${v.map(text).join(",")}]`;
  if (v !== null && typeof v === "object")
    return `{${Object.keys(v)
      .map((k) => `${JSON.stringify(k)}:${text((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(v);
}

const identity: FunctionSource = {
  ...echo,
  name: "identity",
  source: "exports = (value) => value;",
  version: "test:identity",
};

describe("a function's result", () => {
  it("is a number or a string written as the library writes it, integers past 2^53 exactly", async () => {
    const edges = [
      0,
      -0,
      1,
      -1,
      2147483647,
      2147483648,
      -2147483648,
      -2147483649,
      2 ** 53,
      2 ** 53 + 2,
      2 ** 63,
      -(2 ** 63),
      2 ** 64,
      1e21,
      1.5,
      -2.5e-7,
      5e-324,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
    ];
    const values = fc.sample(fc.oneof(fc.double(), fc.integer(), fc.constantFrom(...edges)), 300).concat(edges);
    for (const n of values) {
      // (Each given as written exactly, so that the function gets n itself.)
      const argsText = `[${written(n)}]`;
      const { result } = sandbox.run({
        fn: identity,
        argsText,
        callText: '{"user":{},"request":{}}',
        deadline: Date.now() + 10_000,
      });
      expect(EJSON.parse(argsText, { relaxed: true })[0], String(n)).toBe(n);
      expect(await result, String(n)).toBe(written(n));
    }
    // 1.5 × 2^61: the library's digits would be "3458764513820541000", another Int64.
    expect(written(1.5 * 2 ** 61)).toBe('{"$numberLong":"3458764513820540928"}');
    // Within documents and arrays too; an Int64 the function made keeps its own digits.
    const nested = sandbox.run({
      fn: {
        ...identity,
        source:
          "exports = () => ({ a: [1.5 * 2 ** 61, 2 ** 63, -(2 ** 63)], l: BSON.Long.fromString('3458764513820541000'), d: new Date(0) });",
        version: "test:nested",
      },
      argsText: "[]",
      callText: '{"user":{},"request":{}}',
      deadline: Date.now() + 10_000,
    });
    expect(EJSON.parse(await nested.result, { relaxed: false })).toEqual({
      a: [Long.fromString("3458764513820540928"), new Double(2 ** 63), Long.fromString("-9223372036854775808")],
      l: Long.fromString("3458764513820541000"),
      d: new Date(0),
    });
    for (const s of ["", "plain", 'quote " and \\ backslash', "line\nbreak \u0001 \u2028", "é ✓ 😀", "\ud800 lone"]) {
      const { result } = sandbox.run({
        fn: identity,
        argsText: JSON.stringify([s]),
        callText: '{"user":{},"request":{}}',
        deadline: Date.now() + 10_000,
      });
      const unicode = s as string & { isWellFormed(): boolean; toWellFormed(): string };
      // (Half of a surrogate pair alone is sent as U+FFFD, escaped: data/well-formed-json.ts.)
      if (unicode.isWellFormed()) expect(await result, s).toBe(EJSON.stringify(s, { relaxed: false }));
      else expect(JSON.parse(await result), s).toBe(unicode.toWellFormed());
    }
  });
});

describe("a function's arguments", () => {
  it("are the values the library reads, for every generated text", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(value, { maxLength: 4 }), async (args) => {
        const argsText = text(args);
        expect(await echoed(argsText), argsText).toBe(expected(argsText));
      }),
      {
        numRuns: 300,
        // (A refusal's words where an Int64 past 2^53 is read as a BigInt: the library's, whose
        // messages write the value out.)
        examples: [
          [[{ "": { $numberInt: "0" }, $numberLong: -0 }]],
          [[{ "": { $numberLong: "0" }, $regex: [] }]],
          [[{ "": { $numberLong: "9007199254740993" }, $regex: [] }]],
        ],
      },
    );
  });

  it("are read from a request body as from their text, as the request's JSON gives them", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(value, { maxLength: 4 }), fc.boolean(), async (args, named) => {
        const argsText = text(args);
        // A body's arguments are what JSON.parse made of the request (so -0 is 0, 1e400 null).
        const asParsed = JSON.stringify(JSON.parse(argsText));
        const body = named ? `{"name":"echo","arguments":${argsText},"x":[1]}` : '{"name":"echo"}';
        expect(await echoed(body, true), body).toBe(expected(named ? asParsed : "[]"));
      }),
      { numRuns: 200 },
    );
  });

  it("hold Binary and UUID values, read and written back as given (base64 in the function's process)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 70 }),
        fc.constantFrom("00", "05", "80"),
        fc.uuid(),
        async (bytes, subType, uuid) => {
          const base64 = Buffer.from(bytes).toString("base64");
          const argsText = JSON.stringify([
            { $binary: { base64, subType } },
            { $uuid: uuid },
            { nested: [{ $binary: { base64, subType: "00" } }] },
          ]);
          expect(await echoed(argsText), argsText).toBe(expected(argsText));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("see atob and btoa as Node's", async () => {
    const codec: FunctionSource = {
      ...echo,
      name: "codec",
      source: `exports = (encoded, text) => {
        const attempt = (f) => { try { return f(); } catch (error) { return error.name; } };
        return [attempt(() => atob(encoded)), attempt(() => btoa(text))];
      };`,
      version: "test:codec",
    };
    const inputs = fc.sample(
      fc.tuple(
        fc.oneof(
          fc.uint8Array({ maxLength: 20 }).map((bytes) => Buffer.from(bytes).toString("base64")),
          fc.string({ maxLength: 12 }),
          fc.constantFrom("", "=", "a", "ab", "ab=", "ab==", "abc=", " Y W J j ", "YQ", "YQ=", "YQ===", "Y\tQ"),
        ),
        fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("", "é", "✓", "\u00ff\u0100")),
      ),
      300,
    );
    for (const [encoded, text] of inputs) {
      const node = (f: () => string) => {
        try {
          return f();
        } catch (error) {
          return (error as Error).name;
        }
      };
      const { result } = sandbox.run({
        fn: codec,
        argsText: JSON.stringify([encoded, text]),
        callText: '{"user":{},"request":{}}',
        deadline: Date.now() + 10_000,
      });
      expect(JSON.parse(await result), JSON.stringify([encoded, text])).toEqual([
        node(() => atob(encoded)),
        node(() => btoa(text)),
      ]);
    }
  });

  it("are read as the library reads them in the texts the shortcuts take", async () => {
    for (const argsText of [
      '[{"$numberInt":"1"},{"$numberDouble":"2.5"}]',
      '[{"$numberInt":"-0"},{"$numberDouble":"-0.0"},{"$numberDouble":"NaN"},{"$numberDouble":"-Infinity"}]',
      '[{"a":[{"$numberInt":"2147483647"},{"b":{"$numberDouble":"1e308"}}]},-0,1e400,"$numberInt"]',
      '[{"$numberInt":"12abc"},{"$numberDouble":""},{"$numberInt":" 7"}]',
      '[{"$numberInt":"1","$numberDouble":"2"},{"$numberInt":null},{"x":{"$numberInt":5}}]',
      '[{"__proto__":{"$numberInt":"1"}},{"a\\u0000":{"$numberInt":"1"}}]',
    ]) {
      expect(await echoed(argsText), argsText).toBe(expected(argsText));
    }
  });
});
