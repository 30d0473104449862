/**
 * Fuzz cases whose answer is known in advance, for behaviour a status-and-schema oracle cannot
 * judge: regular-expression queries in every form MongoDB accepts (the expected ids come from
 * JavaScript's own RegExp over the same documents, with patterns both engines read alike) and
 * upserts of the usual shapes (the new document's `_id` comes from the query). A query that
 * matches nothing (issue 17) or an upsert that answers 500 (issue 16) fails here.
 */
import fc from "fast-check";
import type { BodySpec, FuzzCase, TokenSpec } from "./fuzz-case.ts";

/** Where the semantic cases read and write (the harness seeds it and gives it an allow-all rule). */
export const semanticNamespace = { database: "fuzz", collection: "semantics" } as const;
export const upsertNamespace = { database: "fuzz", collection: "semantics-upserts" } as const;

/** The documents the regular-expression cases query (seeded by the harness; never written by cases). */
export const semanticCorpus: { _id: number; title?: unknown; tags?: unknown; body?: string }[] = [
  { _id: 1, title: "hello world", tags: ["red", "Blue"], body: "first line\nsecond line" },
  { _id: 2, title: "Hello There", tags: ["green"], body: "one\ntwo" },
  { _id: 3, title: "goodbye", tags: [], body: "x" },
  { _id: 4, title: "aaa", tags: ["aa", "b"], body: "a\na" },
  { _id: 5, title: "A-1 b_2", tags: "single", body: "tab\there" },
  { _id: 6, tags: ["x", "hello"] },
  { _id: 7, title: 42, tags: [["nested hello"]] },
];

// Patterns: atoms (each optionally quantified) that RE2, PCRE and JavaScript read the same way.
const atoms = ["a", "l", "o", "h", "e", "H", "1", " ", ".", "[a-h]", "[^ ]", "\\w", "\\s", "\\d", "(l|o)", "(?:e|a)"];
const pattern = fc
  .record({
    start: fc.boolean(),
    end: fc.boolean(),
    parts: fc.array(fc.tuple(fc.constantFrom(...atoms), fc.constantFrom("", "", "*", "+", "?")), {
      minLength: 1,
      maxLength: 4,
    }),
  })
  // A space is never quantified: under `x` it disappears and its quantifier would apply to what
  // precedes it (an error in PCRE, or a different pattern).
  .map(({ start, end, parts }) => ({
    start,
    end,
    parts: parts.map(([atom, q]) => [atom, atom === " " ? "" : q] as [string, string]),
  }));
const options = fc.subarray(["i", "m", "s", "x"]).map((o) => o.join(""));

type Pattern = { start: boolean; end: boolean; parts: [string, string][] };

function source(p: Pattern): string {
  return `${p.start ? "^" : ""}${p.parts.map(([a, q]) => a + q).join("")}${p.end ? "$" : ""}`;
}

/** The reference: JavaScript's RegExp (MongoDB's `x` drops the pattern's literal spaces). */
function reference(p: Pattern, opts: string): (value: unknown) => boolean {
  const text = opts.includes("x")
    ? `${p.start ? "^" : ""}${p.parts
        .filter(([a]) => a !== " ")
        .map(([a, q]) => a + q)
        .join("")}${p.end ? "$" : ""}`
    : source(p);
  const re = new RegExp(text, [...opts].filter((f) => f !== "x").join(""));
  return (value) => typeof value === "string" && re.test(value);
}

/** MongoDB's match of a field against a regex: the value, or any element of an array value. */
const fieldMatches = (test: (v: unknown) => boolean, value: unknown) =>
  Array.isArray(value) ? value.some(test) : test(value);

const ejsonRegex = (p: Pattern, opts: string) => ({ $regularExpression: { pattern: source(p), options: opts } });

type Form = {
  name: string;
  query: (p: Pattern, o: string) => unknown;
  expected: (t: (v: unknown) => boolean) => number[];
};

const ids = (keep: (d: (typeof semanticCorpus)[number]) => boolean) => semanticCorpus.filter(keep).map((d) => d._id);

const forms: Form[] = [
  {
    name: "$regex+$options",
    query: (p, o) => ({ title: o ? { $regex: source(p), $options: o } : { $regex: source(p) } }),
    expected: (t) => ids((d) => fieldMatches(t, d.title)),
  },
  {
    name: "$regularExpression",
    query: (p, o) => ({ title: ejsonRegex(p, o) }),
    expected: (t) => ids((d) => fieldMatches(t, d.title)),
  },
  {
    name: "$regex of a $regularExpression",
    query: (p, o) => ({ title: { $regex: ejsonRegex(p, o) } }),
    expected: (t) => ids((d) => fieldMatches(t, d.title)),
  },
  {
    name: "array field",
    query: (p, o) => ({ tags: ejsonRegex(p, o) }),
    // Elements of an array are matched, not elements of a nested array (as in MongoDB).
    expected: (t) => ids((d) => fieldMatches(t, d.tags)),
  },
  {
    name: "$in",
    query: (p, o) => ({ title: { $in: [ejsonRegex(p, o), "goodbye"] } }),
    expected: (t) => ids((d) => d.title === "goodbye" || fieldMatches(t, d.title)),
  },
  {
    name: "$nin",
    query: (p, o) => ({ title: { $nin: [ejsonRegex(p, o)] } }),
    expected: (t) => ids((d) => !fieldMatches(t, d.title)),
  },
  {
    name: "$not",
    query: (p, o) => ({ title: { $not: ejsonRegex(p, o) } }),
    expected: (t) => ids((d) => !fieldMatches(t, d.title)),
  },
  {
    name: "$regex beside $ne",
    query: (p, o) => ({ title: { $regex: source(p), $options: o, $ne: "aaa" } }),
    expected: (t) => ids((d) => d.title !== "aaa" && fieldMatches(t, d.title)),
  },
  {
    name: "$or",
    query: (p, o) => ({ $or: [{ title: ejsonRegex(p, o) }, { _id: 3 }] }),
    expected: (t) => ids((d) => d._id === 3 || fieldMatches(t, d.title)),
  },
  {
    name: "$expr $regexMatch",
    query: (p, o) => ({
      $expr: { $regexMatch: { input: { $ifNull: [{ $toString: "$title" }, ""] }, regex: source(p), options: o } },
    }),
    expected: (t) => ids((d) => t(d.title === undefined ? "" : String(d.title))),
  },
];

const token: TokenSpec = { kind: "access", placement: "header" };

function callCase(mutation: string, argument: Record<string, unknown>, name: string, expect: unknown): FuzzCase {
  return {
    target: "callFunction",
    mutation,
    method: "POST",
    path: "/api/client/v2.0/app/@@APP@@/functions/call",
    query: [],
    token,
    contentType: "application/json",
    origin: null,
    body: { kind: "json", value: { name, service: "mongodb-atlas", arguments: [argument] }, inject: null } as BodySpec,
    expect,
  };
}

const int = (n: number) => ({ $numberInt: String(n) });

const regexCase: fc.Arbitrary<FuzzCase> = fc
  .record({
    form: fc.constantFrom(...forms),
    p: pattern,
    o: options,
    action: fc.constantFrom("find", "count", "aggregate"),
  })
  .map(({ form, p, o, action }) => {
    const query = form.query(p, o);
    const expected = form.expected(reference(p, o));
    const mutation = `semantics: regex ${form.name} (${action})`;
    if (action === "count")
      return callCase(mutation, { ...semanticNamespace, query }, "count", { $numberLong: String(expected.length) });
    if (action === "aggregate")
      return callCase(
        mutation,
        { ...semanticNamespace, pipeline: [{ $match: query }, { $sort: { _id: 1 } }, { $project: { _id: 1 } }] },
        "aggregate",
        expected.map((id) => ({ _id: int(id) })),
      );
    return callCase(
      mutation,
      { ...semanticNamespace, query, project: { _id: 1 }, sort: { _id: 1 } },
      "find",
      expected.map((id) => ({ _id: int(id) })),
    );
  });

/** Upserts that insert: the query's `_id` (fresh each case) seeds the new document. */
const upsertCase: fc.Arbitrary<FuzzCase> = fc
  .record({
    id: fc.oneof(
      fc.stringMatching(/^[0-9a-f]{24}$/).map((h) => ({ $oid: h })),
      fc.uuid().map((u) => `u-${u}`),
    ),
    shape: fc.constantFrom("plain", "$eq", "$in", "$and", "dotted", "with-operator"),
    update: fc.constantFrom<Record<string, unknown>>(
      { $set: { v: 1 } },
      { $inc: { n: 1 }, $setOnInsert: { created: true } },
      { $push: { log: "x" } },
      { $set: { "meta.seen": true } },
    ),
    action: fc.constantFrom("updateOne", "updateMany", "findOneAndUpdate"),
  })
  .map(({ id, shape, update, action }) => {
    const query =
      shape === "plain"
        ? { _id: id }
        : shape === "$eq"
          ? { _id: { $eq: id } }
          : shape === "$in"
            ? { _id: { $in: [id] } }
            : shape === "$and"
              ? { $and: [{ _id: id }, { kind: "k" }] }
              : shape === "dotted"
                ? { _id: id, "a.b": 2 }
                : { _id: id, n: { $gt: 100 } };
    const mutation = `semantics: upsert ${shape} (${action})`;
    if (action === "findOneAndUpdate")
      return callCase(
        mutation,
        { ...upsertNamespace, filter: query, update, upsert: true, returnNewDocument: true, projection: { _id: 1 } },
        action,
        { _id: id },
      );
    return callCase(mutation, { ...upsertNamespace, query, update, upsert: true }, action, {
      matchedCount: int(0),
      modifiedCount: int(0),
      upsertedId: id,
    });
  });

export const semanticCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { weight: 3, arbitrary: regexCase },
  { weight: 1, arbitrary: upsertCase },
);
