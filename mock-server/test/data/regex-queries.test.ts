/**
 * Regular expressions in every place MongoDB accepts them, through the `mongodb-atlas` actions
 * (issue 17 point 1): each form as Extended JSON the SDKs send, MongoDB's flags, and MongoDB's
 * errors for bad patterns and options (never a 500).
 */
import type { FastifyInstance } from "fastify";
import { RE2JS } from "re2js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NeedsWorker } from "../../src/data/query-limits.ts";
import { compileRegex, programEstimate, stripExtended } from "../../src/data/regex.ts";
import { anonymousLogin, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";
import { onSliceByWork } from "../helpers/main-thread.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
beforeAll(async () => {
  app = await testApp({ logLevel: "error" });
  appId = await newOpenApp(app);
  token = (await anonymousLogin(app, appId)).access_token;
  await action("insertMany", {
    ...ns,
    documents: [
      { _id: 1, title: "hello world", tags: ["red", "Blue"], body: "first line\nsecond line" },
      { _id: 2, title: "Hello there", tags: ["green"], body: "one\ntwo" },
      { _id: 3, title: "goodbye", tags: [], body: "x" },
      { _id: 4, title: "héllo ünïcode", tags: ["red"], body: "" },
      { _id: 5, pattern: { $regularExpression: { pattern: "^ab", options: "i" } } },
    ],
  });
});
afterAll(() => app.close());

const ns = { database: "db", collection: "notes" };

const action = (name: string, argument: Record<string, unknown>) => mongoAction(app, appId, token, name, argument);

async function ids(query: Record<string, unknown>): Promise<number[]> {
  const { response, body } = await action("find", { ...ns, query, sort: { _id: 1 } });
  expect(response.statusCode, JSON.stringify(body)).toBe(200);
  return (body as { _id: { $numberInt: string } }[]).map((d) => Number(d._id.$numberInt));
}

const re = (pattern: string, options = "") => ({ $regularExpression: { pattern, options } });

describe("regular-expression queries", () => {
  it("$regex with and without $options, and the canonical $regularExpression (a realm-web RegExp)", async () => {
    expect(await ids({ title: { $regex: "hello" } })).toEqual([1]);
    expect(await ids({ title: { $regex: "^hel", $options: "i" } })).toEqual([1, 2]);
    expect(await ids({ title: re("hello") })).toEqual([1]);
    expect(await ids({ title: re("^HEL", "i") })).toEqual([1, 2]);
    expect(await ids({ title: { $regex: re("there$") } })).toEqual([2]);
    expect(await ids({ title: { $regex: re("^hel"), $options: "i" } })).toEqual([1, 2]);
  });

  it("keeps the other operators beside $regex", async () => {
    expect(await ids({ title: { $regex: "^hel", $options: "i", $nin: ["Hello there"] } })).toEqual([1]);
    expect(await ids({ title: { $nin: ["hello world"], $regex: "ello" } })).toEqual([2]);
  });

  it("matches array elements, $in / $nin / $all with regular expressions, and $not", async () => {
    expect(await ids({ tags: re("^b", "i") })).toEqual([1]);
    expect(await ids({ title: { $in: [re("^good"), "Hello there"] } })).toEqual([2, 3]);
    expect(await ids({ tags: { $in: [re("^gr")] } })).toEqual([2]);
    expect(await ids({ title: { $exists: true, $nin: [re("hello", "i")] } })).toEqual([3, 4]);
    expect(await ids({ tags: { $all: [re("^r"), re("lue$")] } })).toEqual([1]);
    expect(await ids({ title: { $exists: true, $not: re("^h", "i") } })).toEqual([3]);
    expect(await ids({ title: { $exists: true, $not: { $regex: "^h" } } })).toEqual([2, 3]);
    expect(await ids({ $or: [{ title: re("bye$") }, { tags: re("^gre") }] })).toEqual([2, 3]);
    expect(await ids({ tags: { $elemMatch: { $regex: "^bl", $options: "i" } } })).toEqual([1]);
  });

  it("honours MongoDB's flags m, s and x, and matches Unicode text", async () => {
    expect(await ids({ body: { $regex: "^second", $options: "" } })).toEqual([]);
    expect(await ids({ body: { $regex: "^second", $options: "m" } })).toEqual([1]);
    expect(await ids({ body: { $regex: "one.two" } })).toEqual([]);
    expect(await ids({ body: { $regex: "one.two", $options: "s" } })).toEqual([2]);
    expect(await ids({ title: { $regex: "HEL lo # a comment\n  \\ world", $options: "x" } })).toEqual([]);
    expect(await ids({ title: { $regex: "HEL lo # a comment\n  \\ world", $options: "xi" } })).toEqual([1]);
    expect(await ids({ title: { $regex: "HEL lo # a comment\n  \\ world", $options: "i" } })).toEqual([]);
    expect(await ids({ title: { $regex: "^h[é]llo\\s\\S" } })).toEqual([4]);
    // \w is ASCII, as in MongoDB's PCRE without UCP.
    expect(await ids({ title: { $regex: "^h.llo\\s\\w" } })).toEqual([1]);
    expect(await ids({ title: { $regex: "HÉLLO", $options: "i" } })).toEqual([4]);
  });

  it("a stored regular expression: equal by $eq, matched by an equal regex, and sent back as one", async () => {
    expect(await ids({ pattern: { $eq: re("^ab", "i") } })).toEqual([5]);
    expect(await ids({ pattern: re("^ab", "i") })).toEqual([5]);
    expect(await ids({ pattern: { $type: "regex" } })).toEqual([5]);
    const { body } = await action("findOne", { ...ns, query: { _id: 5 } });
    expect(body.pattern).toEqual(re("^ab", "i"));
  });

  it("count, updates, deletes and aggregation $match take regular expressions too", async () => {
    expect((await action("count", { ...ns, query: { title: re("^h", "i") } })).body).toEqual({ $numberLong: "3" });
    const updated = await action("updateMany", {
      ...ns,
      query: { title: { $regex: "^hello", $options: "i" } },
      update: { $set: { greeting: true } },
    });
    expect(updated.body.matchedCount).toEqual({ $numberInt: "2" });
    expect(await ids({ greeting: true })).toEqual([1, 2]);
    const pulled = await action("updateOne", { ...ns, query: { _id: 1 }, update: { $pull: { tags: re("^b", "i") } } });
    expect(pulled.body.modifiedCount).toEqual({ $numberInt: "1" });
    const { body } = await action("aggregate", {
      ...ns,
      pipeline: [{ $match: { title: { $regex: "^good" } } }, { $project: { _id: 1 } }],
    });
    expect(body).toEqual([{ _id: { $numberInt: "3" } }]);
    const found = await action("findOneAndUpdate", {
      ...ns,
      filter: { title: re("bye") },
      update: { $set: { seen: true } },
      returnNewDocument: true,
    });
    expect(found.body).toMatchObject({ _id: { $numberInt: "3" }, seen: true });
  });

  it("$regexMatch, $regexFind and $regexFindAll in aggregation and in $expr", async () => {
    const { body } = await action("aggregate", {
      ...ns,
      pipeline: [
        { $match: { _id: { $in: [1, 4] } } },
        { $sort: { _id: 1 } },
        {
          $project: {
            m: { $regexMatch: { input: "$title", regex: "^H", options: "i" } },
            f: { $regexFind: { input: "$title", regex: re("(l+)(o)") } },
            all: { $regexFindAll: { input: "$title", regex: "o" } },
            empty: { $regexFindAll: { input: "ab", regex: "x*" } },
            none: { $regexFind: { input: "$missing", regex: "a" } },
            astral: { $regexFind: { input: "\u{1F600}\u{1F600}ab", regex: "b" } },
          },
        },
      ],
    });
    expect(body[0]).toMatchObject({
      m: true,
      f: { match: "llo", idx: { $numberInt: "2" }, captures: ["ll", "o"] },
      all: [
        { match: "o", idx: { $numberInt: "4" } },
        { match: "o", idx: { $numberInt: "7" } },
      ],
      none: null,
    });
    // (An empty match at each character, none past the last: regex.js's "bbbb" with "()" finds 4.)
    expect(body[0].empty).toHaveLength(2);
    // Positions count code points, as MongoDB does.
    expect(body[1].f).toMatchObject({ match: "llo", idx: { $numberInt: "2" } });
    expect(body[1].all[1].idx).toEqual({ $numberInt: "10" });
    expect(body[0].astral.idx).toEqual({ $numberInt: "3" });
    expect(await ids({ $expr: { $regexMatch: { input: "$title", regex: "THERE", options: "i" } } })).toEqual([2]);
  });

  it("answers MongoDB's errors for bad patterns and options, never a 500", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ title: { $regex: "(" } }, /^Regular expression is invalid: missing closing \)/],
      [{ title: { $regex: "a", $options: "q" } }, /^invalid flag in regex options: q$/],
      [{ title: re("a", "q") }, /^invalid flag in regex options: q$/],
      [{ title: { $options: "i" } }, /^\$options needs a \$regex$/],
      [{ title: { $regex: 5 } }, /^\$regex has to be a string$/],
      [{ title: { $regex: "(a)\\1" } }, /^Regular expression is invalid: .*backreferences/],
      [{ title: { $regex: "a(?=b)" } }, /^Regular expression is invalid: .*lookahead/],
      [{ title: { $in: [{ $gt: 1 }] } }, /^cannot nest \$ under \$in$/],
      [{ title: { $mockRegex: "a" } }, /^unknown operator: \$mockRegex$/],
      [{ $expr: { $regexMatch: { input: "$title", regex: "[" } } }, /^Invalid Regex in \$regexMatch: /],
      [{ $expr: { $regexMatch: { input: "$title", regex: 5 } } }, /needs 'regex' to be of type string or regex/],
      [{ $expr: { $regexMatch: { input: "$title" } } }, /requires 'regex' parameter/],
      [
        { $expr: { $regexMatch: { input: "$title", regex: re("a", "i"), options: "m" } } },
        /found regex option\(s\) specified in both 'regex' and 'option' fields/,
      ],
      [{ $expr: { $regexMatch: { input: 5, regex: "a" } } }, /needs 'input' to be of type string/],
    ];
    for (const [query, message] of cases) {
      const { response, body } = await action("find", { ...ns, query });
      expect(response.statusCode, JSON.stringify(query)).toBe(400);
      expect(body.error_code).toBe("MongoDBError");
      expect(body.error).toMatch(message);
    }
  });
});

describe("stripExtended (the x flag)", () => {
  it("drops whitespace and comments outside classes, keeps escapes, classes and \\Q…\\E", () => {
    expect(stripExtended("a b # comment\nc")).toBe("abc");
    expect(stripExtended("a\\ b")).toBe("a\\ b");
    expect(stripExtended("[ #]x")).toBe("[ #]x");
    expect(stripExtended("[] ]x")).toBe("[] ]x");
    expect(stripExtended("\\Q a # b\\E c")).toBe("\\Q a # b\\Ec");
    expect(stripExtended("a\\#b")).toBe("a\\#b");
  });
});

describe("the work of a regular expression on the main thread's slice", () => {
  const onSlice = onSliceByWork;

  it("estimates a pattern's program as RE2 compiles it: never far under, repetitions multiplied", () => {
    const patterns = [
      "foo",
      "^\\d{10}$",
      "a{1000}b",
      "(?:ab|cd){100}",
      "(a{10}){10}x",
      "[a-z]{1000}",
      "\\pL{200}x",
      "(?i)(?P<w>\\w+)\\s+\\Q{1000}\\E",
      "[]a{9}]{50}",
      "x{3,}y{2,7}z?",
      "a{1000}".repeat(40),
    ];
    for (const pattern of patterns) {
      const size = RE2JS.compile(pattern, RE2JS.LOOKBEHINDS).programSize();
      const estimate = programEstimate(pattern);
      expect(estimate, pattern).toBeGreaterThanOrEqual(size / 2);
      expect(estimate, pattern).toBeLessThanOrEqual(size * 4 + 8);
    }
  });

  it("leaves to a worker a pattern that compiles long, and a long input; small ones run here", () => {
    // (40,000 instructions: ~0.1 s of compiling here; at MongoDB's longest pattern, seconds.)
    const large = `${"a{1000}".repeat(40)}z`;
    expect(() => onSlice(() => compileRegex(large, ""))).toThrow(NeedsWorker);
    // Not kept: the worker compiles its own, and the slice refuses it again.
    expect(() => onSlice(() => compileRegex(large, ""))).toThrow(NeedsWorker);
    const digits = onSlice(() => compileRegex("\\d{10}", ""));
    expect(onSlice(() => digits.test(`${"x".repeat(10_000)}0123456789`))).toBe(true);
    // A test over an input past the slice's share (16 MB: ~0.1 s here) is left to a worker too.
    expect(() => onSlice(() => digits.test("x".repeat(16 * 1024 * 1024)))).toThrow(NeedsWorker);
    // Outside a slice (in a worker), everything runs.
    expect(compileRegex(large, "").test("a".repeat(40_000))).toBe(false);
  });
});
