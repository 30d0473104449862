/**
 * Fuzz cases from the three OpenAPI documents: for every operation, a request made from its path,
 * method, parameters and body schema (or one of its documented examples), then corrupted: hostile
 * and malformed JSON, wrong types, huge and deeply nested bodies, prototype-pollution keys, broken
 * Extended JSON and MongoDB operators, forged, expired and `alg: none` tokens, broken multipart, bad
 * base64 in `baas_request`, wrong content types; plus requests no operation matches.
 *
 * Values the fuzzer only knows at run time (the fixture app, user, API key, account, a mail id…)
 * are placeholders (`@@APP@@`…) that the harness fills in.
 */
import { documents } from "@harness/openapi/documents";
import fc from "fast-check";
import { routes as appServicesRoutes } from "../../src/app-services/routes.ts";
import { mongoActions } from "../../src/data/mongo-actions.ts";
import { operations } from "../../src/openapi/operations.ts";
import type {
  BodySpec,
  FormPart,
  FuzzCase,
  Injection,
  MultipartCorruption,
  TokenKind,
  TokenSpec,
} from "./fuzz-case.ts";
import { semanticCase } from "./semantics.ts";

export const placeholders = {
  app: "@@APP@@",
  otherApp: "@@OTHER_APP@@",
  user: "@@USER@@",
  apiKey: "@@API_KEY@@",
  apiKeySecret: "@@API_KEY_SECRET@@",
  publicKey: "@@PUBLIC_KEY@@",
  mail: "@@MAIL@@",
  email: "@@EMAIL@@",
  password: "@@PASSWORD@@",
  token: "@@TOKEN@@",
  tokenId: "@@TOKEN_ID@@",
} as const;
const P = placeholders;

// ---------------------------------------------------------------------------------------------
// Values

const hex24 = fc.stringMatching(/^[0-9a-f]{24}$/);

/** Percent-encodes any string (a lone surrogate becomes U+FFFD, as a browser would send it). */
export const encodePart = (value: string) =>
  encodeURIComponent((value as string & { toWellFormed(): string }).toWellFormed());
const weirdText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.constantFrom(
    "",
    " ",
    "\u0000",
    // The PostgreSQL store's escape character, alone and as U+0000's escape.
    "\uE000",
    "\uE0000",
    "../../etc/passwd",
    "%00",
    "%zz",
    "null",
    "undefined",
    "__proto__",
    "constructor",
    "$where",
    "a".repeat(300),
    "😀\ud800",
    "<script>alert(1)</script>",
    "{{constructor.constructor('return process')()}}",
  ),
);

/** Extended JSON, well-formed and broken. */
const extendedJson = fc.oneof(
  hex24.map((h) => ({ $oid: h })),
  fc.constantFrom(
    { $oid: "zz" },
    { $oid: 5 },
    { $oid: "65a1b2c3d4e5f60718293a4" },
    { $date: "2026-01-01T00:00:00Z" },
    { $date: { $numberLong: "1700000000000" } },
    { $date: "yesterday" },
    { $date: {} },
    { $date: { $numberLong: "1e400" } },
    { $numberLong: "123" },
    { $numberLong: "abc" },
    { $numberLong: "99999999999999999999999" },
    { $numberInt: "5" },
    { $numberInt: "5.5" },
    { $numberInt: "9999999999" },
    { $numberDouble: "1.5" },
    { $numberDouble: "NaN" },
    { $numberDouble: "-Infinity" },
    { $numberDouble: "x" },
    { $numberDecimal: "1.20" },
    { $numberDecimal: "not a number" },
    { $binary: { base64: "AAEC", subType: "00" } },
    { $binary: { base64: "!!!not base64", subType: "00" } },
    { $binary: { base64: "AAEC", subType: "zz" } },
    { $binary: "AAEC" },
    { $regularExpression: { pattern: "^a", options: "i" } },
    { $regularExpression: { pattern: "(", options: "q" } },
    { $timestamp: { t: 1, i: 2 } },
    { $timestamp: { t: -1, i: "x" } },
    { $undefined: true },
    { $minKey: 1 },
    { $maxKey: 1 },
    { $symbol: 5 },
    { $code: "function () { return process }" },
    { $dbPointer: { $ref: "c", $id: { $oid: "65a1b2c3d4e5f60718293a4b" } } },
    { $ref: "c", $id: 1 },
    { $uuid: "not-a-uuid" },
  ),
);

/** MongoDB query and update operators, harmless and hostile. */
const mongoOperators = fc.constantFrom(
  {},
  { n: 1 },
  { n: { $gt: 5 } },
  { $where: "sleep(10000) || true" },
  { $expr: { $function: { body: "function () { return process }", args: [], lang: "js" } } },
  { $expr: { $gt: ["$n", 1] } },
  { title: { $regex: "(" } },
  { title: { $regex: "^(a+)+$" } },
  { $foo: 1 },
  { n: { $bogus: 1 } },
  { $or: [] },
  { $and: "x" },
  { n: { $in: 5 } },
  { "a.b.c.d.e": { $exists: true } },
  { $text: { $search: "x" } },
  { $set: { n: 1 } },
  { $inc: { n: "x" } },
  { $unset: "" },
  { $rename: { a: "a" } },
  { $push: { tags: { $each: 5 } } },
  // Regular expressions in every form, valid and not, and the catastrophic ones.
  { title: { $regex: "^hel", $options: "i" } },
  { title: { $regex: "a", $options: "q" } },
  { title: { $regex: "a", $options: 5 } },
  { title: { $options: "i" } },
  { title: { $regex: "(a)\\1" } },
  { title: { $regex: "a(?=b)" } },
  { title: { $regex: "hel lo # comment", $options: "x" } },
  { title: { $regularExpression: { pattern: "^(a+)+$", options: "" } } },
  { title: { $regularExpression: { pattern: "a", options: "zz" } } },
  { title: { $regularExpression: { pattern: "[", options: "i" } } },
  { title: { $regularExpression: 5 } },
  { title: { $regex: { $regularExpression: { pattern: "x", options: "i" } }, $options: "m" } },
  { title: { $regex: "^a", $nin: ["ab"] } },
  { title: { $in: [{ $regularExpression: { pattern: "^a", options: "" } }, "b"] } },
  { title: { $in: [{ $regex: "^a" }] } },
  { title: { $nin: [{ $regularExpression: { pattern: "^(a|a)*$", options: "" } }] } },
  { title: { $not: { $regularExpression: { pattern: "^h", options: "i" } } } },
  { title: { $not: "x" } },
  { tags: { $all: [{ $regularExpression: { pattern: "^r", options: "" } }] } },
  { tags: { $elemMatch: { $regex: "^b", $options: "i" } } },
  { $expr: { $regexMatch: { input: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", regex: "^(a+)+$" } } },
  { $expr: { $regexFindAll: { input: "$title", regex: "x*" } } },
  {
    $expr: {
      $regexFind: { input: "$title", regex: { $regularExpression: { pattern: "a", options: "i" } }, options: "m" },
    },
  },
  { $expr: { $gt: [{ $size: { $range: [0, 2147483647] } }, 0] } },
  { $mockRegex: "a" },
  // Upsert shapes: an `_id` (and other equality fields) in the query.
  { _id: "upsert-me" },
  { _id: { $oid: "65a1b2c3d4e5f60718293a4c" }, "a.b": 1 },
  { _id: { $eq: 5 }, $and: [{ k: 1 }] },
  { _id: { $in: ["one"] } },
  { $set: { _id: "changed" } },
  { $setOnInsert: { created: true }, $inc: { n: 1 } },
  { a: 1, "a.b": 2 },
);

const pipelines = fc.array(
  fc.constantFrom(
    { $match: {} },
    { $match: { $where: "1" } },
    { $group: { _id: null, n: { $sum: 1 } } },
    { $group: { _id: "$x", n: { $accumulator: { init: "function(){}" } } } },
    { $lookup: { from: "items", localField: "a", foreignField: "b", as: "c" } },
    { $out: "stolen" },
    { $merge: { into: "stolen" } },
    { $limit: -1 },
    { $skip: "x" },
    { $sort: { n: 5 } },
    { $unknown: 1 },
    { $project: { _id: 0, n: 1, x: { $function: { body: "x", args: [], lang: "js" } } } },
    { $unwind: "$tags" },
    { $facet: { a: [{ $count: "n" }] } },
    { $match: { title: { $regex: "^(a+)+$" } } },
    { $project: { x: { $regexFindAll: { input: "$title", regex: "", options: "x" } } } },
    { $project: { x: { $map: { input: { $range: [0, 100000] }, in: { $range: [0, 100000] } } } } },
    { $project: { x: { $range: [0, 2147483647] } } },
    { $sample: { size: 1e9 } },
    {},
  ),
  { maxLength: 4 },
);

const jsonValue = fc.jsonValue({ maxDepth: 3 });
const anyValue = fc.oneof({ weight: 3, arbitrary: jsonValue }, { weight: 2, arbitrary: extendedJson });

/** A JSON Schema (2020-12, as the documents use it) → values that mostly satisfy it. */
function fromSchema(schema: Record<string, unknown> | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 6) return jsonValue;
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  const variants = (schema.oneOf ?? schema.anyOf) as Record<string, unknown>[] | undefined;
  if (variants?.length) return fc.oneof(...variants.map((v) => fromSchema(v, depth + 1)));
  if (schema["x-extended-json"]) return fc.oneof(extendedJson, jsonValue);
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : schema.type ? [schema.type as string] : [];
  if (types.length > 1) return fc.oneof(...types.map((type) => fromSchema({ ...schema, type }, depth + 1)));
  switch (types[0]) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, sub] of Object.entries(properties)) model[name] = fromSchema(sub, depth + 1);
      if (Object.keys(model).length === 0) return fc.dictionary(fc.string({ maxLength: 8 }), anyValue, { maxKeys: 3 });
      return fc.record(model, { requiredKeys: ((schema.required ?? []) as string[]).filter((k) => k in model) });
    }
    case "array":
      return fc.array(fromSchema(schema.items as Record<string, unknown> | undefined, depth + 1), {
        minLength: Math.min(Number(schema.minItems ?? 0), 3),
        maxLength: Math.min(Number(schema.maxItems ?? 3), 3),
      });
    case "string": {
      if (typeof schema.pattern === "string") return fc.stringMatching(new RegExp(schema.pattern));
      if (schema.format === "date-time") return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      const minLength = Number(schema.minLength ?? 0);
      return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(Number(schema.maxLength ?? 24), 24)) });
    }
    case "integer":
      return fc.integer({
        min: Number(schema.minimum ?? -1_000_000),
        max: Math.min(Number(schema.maximum ?? 1_000_000), 1_000_000),
      });
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: Number(schema.minimum ?? -1e9), max: 1e9 });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      return jsonValue;
  }
}

// ---------------------------------------------------------------------------------------------
// Bodies that reach deeper than schema-shaped ones: real names, credentials and arguments

const database = fc.constantFrom("bench", "fuzz", "notes-app", "", "$bad", "a\u0000b", "system", "x".repeat(200));
const collectionName = fc.constantFrom("items", "notes", "profiles", "", "$cmd", "a.b", "system.users");

const mongoArgument = fc.record(
  {
    database,
    collection: collectionName,
    query: fc.oneof(mongoOperators, extendedJson),
    filter: fc.oneof(mongoOperators, extendedJson),
    update: fc.oneof(mongoOperators, fc.array(mongoOperators, { maxLength: 2 })),
    document: fc.oneof(jsonValue, extendedJson, fc.constant({ _id: { $oid: "65a1b2c3d4e5f60718293a4b" } })),
    documents: fc.array(fc.oneof(jsonValue, extendedJson), { maxLength: 3 }),
    pipeline: pipelines,
    project: fc.oneof(fc.constant({ n: 1 }), mongoOperators),
    sort: fc.constantFrom({ n: 1 }, { n: "up" }, { $natural: -1 }, []),
    limit: fc.oneof(fc.integer(), fc.constant({ $numberLong: "5" }), fc.constant("5")),
    upsert: fc.oneof(fc.boolean(), fc.constant("yes")),
    ids: fc.array(fc.oneof(jsonValue, extendedJson), { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

const functionNames = fc.constantFrom(
  "sum",
  "noteStats",
  "authenticate",
  "confirmUser",
  "resetPassword",
  "nope",
  "",
  "constructor",
  "__proto__",
  "toString",
  ...mongoActions,
  "watch",
);

const callBody = fc.record(
  {
    name: functionNames,
    service: fc.constantFrom("mongodb-atlas", "mongodb-atlas", "other", "", undefined),
    arguments: fc.oneof(
      fc.array(fc.oneof(mongoArgument, anyValue), { maxLength: 3 }),
      fc.constant([{ $numberInt: "1" }, { $numberDouble: "2.5" }]),
      anyValue,
    ),
  },
  { requiredKeys: ["name"] },
);

const credentials = fc.oneof(
  fc.constant({ username: P.email, password: P.password }),
  fc.constant({ username: P.email, password: "wrong password" }),
  fc.constant({ key: P.apiKeySecret }),
  fc.record({ username: weirdText, password: weirdText }),
  fc.record({ key: weirdText }),
  fc.record({ token: fc.oneof(weirdText, fc.constant(`${P.token}`)) }),
  fc.record({ username: weirdText, pin: fc.oneof(fc.string(), fc.integer()) }),
  fc.record({ options: fc.record({ device: fc.record({ deviceId: fc.oneof(hex24, extendedJson, weirdText) }) }) }),
);

const userpassBodies = fc.oneof(
  fc.constant({ email: P.email, password: P.password }),
  fc.record({ email: fc.oneof(fc.emailAddress(), weirdText), password: fc.oneof(fc.string(), weirdText) }),
  fc.constant({ token: P.token, tokenId: P.tokenId }),
  fc.record({ token: weirdText, tokenId: fc.oneof(hex24, weirdText) }),
  fc.record({ token: weirdText, tokenId: hex24, password: fc.string({ maxLength: 200 }) }),
  fc.record({ email: fc.oneof(fc.constant(P.email), weirdText), password: fc.string(), arguments: fc.array(anyValue) }),
);

const templateParams = fc.oneof(
  fc.record({
    to_email: fc.oneof(fc.emailAddress(), weirdText, fc.constant("a@b.co, c@d.co")),
    subject: fc.string(),
    message: fc.string(),
  }),
  fc.dictionary(fc.string({ maxLength: 10 }), anyValue, { maxKeys: 4 }),
  fc.constant({ to_email: "{{to_email}}", message: "{{#each x}}{{/each}}{{{raw}}}{{constructor}}" }),
  anyValue,
);

const emailJsBody = fc.record(
  {
    user_id: fc.oneof(fc.constant(P.publicKey), fc.constant("local-public-key"), weirdText, anyValue),
    service_id: fc.oneof(fc.constantFrom("local_service", "default_service"), weirdText, anyValue),
    template_id: fc.oneof(fc.constantFrom("local_template", "contact_form", "note_email"), weirdText, anyValue),
    template_params: templateParams,
    accessToken: fc.oneof(weirdText, anyValue),
    lib_version: fc.string(),
  },
  { requiredKeys: [] },
);

/** Bodies worth trying per operation, beyond the schema's shape. */
const semanticBodies: Record<string, fc.Arbitrary<unknown>> = {
  callFunction: callBody,
  login: credentials,
  registerUser: userpassBodies,
  confirmUser: userpassBodies,
  resendConfirmationEmail: userpassBodies,
  retryCustomConfirmation: userpassBodies,
  resetPassword: userpassBodies,
  sendResetPasswordEmail: userpassBodies,
  callResetPasswordFunction: userpassBodies,
  sendEmail: emailJsBody,
  createApiKey: fc.record({ name: fc.oneof(fc.stringMatching(/^[a-z0-9_-]{1,20}$/), weirdText, anyValue) }),
  insertDocuments: fc.record({
    documents: fc.oneof(fc.array(fc.oneof(jsonValue, extendedJson), { maxLength: 4 }), anyValue),
  }),
  addFault: fc.record(
    {
      operationId: fc.oneof(fc.constantFrom(...operations.keys()), weirdText),
      status: fc.oneof(fc.integer({ min: 200, max: 499 }), fc.integer()),
      body: anyValue,
      delayMs: fc.integer({ min: 0, max: 20 }),
      times: fc.integer({ min: 1, max: 3 }),
    },
    { requiredKeys: ["operationId"] },
  ),
  advanceClock: fc.record({ advanceBy: fc.oneof(fc.integer({ min: -1e6, max: 1e9 }), anyValue) }),
};
semanticBodies.addEmailJsFault = semanticBodies.addFault!;
semanticBodies.advanceEmailJsClock = semanticBodies.advanceClock!;

// ---------------------------------------------------------------------------------------------
// Operations: path, query, token, body

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Record<string, unknown>;
}

const pathValues: Record<string, fc.Arbitrary<string>> = {
  appId: fc.oneof(
    { weight: 8, arbitrary: fc.constant(P.app) },
    { weight: 2, arbitrary: fc.constant(P.otherApp) },
    { weight: 1, arbitrary: fc.constantFrom("no-such-app", "x".repeat(129), "%2e%2e", "local-app%00") },
    // Sent as they are: past the router's default parameter length, malformed percent-encoding.
    { weight: 1, arbitrary: fc.constantFrom("y".repeat(600), "%ZZ", "local-app%", "%C3%28", "%E2%82") },
    { weight: 1, arbitrary: weirdText.filter((s) => s !== "").map(encodePart) },
  ),
  provider: fc.constantFrom(
    "anon-user",
    "local-userpass",
    "api-key",
    "custom-token",
    "custom-function",
    "oauth2-google",
    "__proto__",
    "constructor",
    "x".repeat(300),
  ),
  apiKeyId: fc.oneof(fc.constant(P.apiKey), hex24, weirdText.filter((s) => s !== "").map(encodePart), fc.constant("%")),
  userId: fc.oneof(fc.constant(P.user), hex24, weirdText.filter((s) => s !== "").map(encodePart), fc.constant("%x")),
  document: fc.constantFrom("app-services", "emailjs", "mock-control", "nope", "..%2f..%2fpackage.json", "__proto__"),
  database: fc.constantFrom("bench", "fuzz", "notes-app", "%24bad", "x".repeat(200)),
  collection: fc.constantFrom("items", "notes", "profiles", "%24cmd", "a.b", "50%", "%FF"),
  messageId: fc.oneof(fc.constant(P.mail), fc.constantFrom("m-1", "m-0", "m--1", "m-99999999999999999999", "nope")),
  publicKey: fc.oneof(
    { weight: 6, arbitrary: fc.constant(P.publicKey) },
    { weight: 1, arbitrary: fc.constantFrom("local-public-key", "nope", "__proto__") },
    { weight: 1, arbitrary: weirdText.filter((s) => s !== "").map(encodePart) },
  ),
};

function baasRequest(): fc.Arbitrary<string> {
  const watch = fc.record(
    {
      name: fc.constantFrom("watch", "watch", "find", "", 5),
      service: fc.constantFrom("mongodb-atlas", "mongodb-atlas", "other", null),
      arguments: fc.oneof(
        fc.array(mongoArgument, { minLength: 1, maxLength: 1 }),
        fc.constant([{ database: "fuzz", collection: "items" }]),
        fc.constant([{ database: "fuzz", collection: "items", filter: { operationType: "insert" } }]),
        anyValue,
      ),
    },
    { requiredKeys: [] },
  );
  const encode = (value: unknown, url: boolean) =>
    Buffer.from(JSON.stringify(value)).toString(url ? "base64url" : "base64");
  return fc.oneof(
    fc.tuple(watch, fc.boolean()).map(([w, url]) => encode(w, url)),
    fc.constantFrom("!!!", "====", "e30", "W10", "bnVsbA==", "e30=====", "%", "a b", "eyJuYW1lIjoid2F0Y2gi"),
    fc.string({ unit: "binary", maxLength: 60 }),
    fc.constant(Buffer.from("{not json").toString("base64")),
    fc.constant(Buffer.from('"just a string"').toString("base64")),
    fc.constant("A".repeat(100_001)),
  );
}

function queryValue(p: Parameter): fc.Arbitrary<string> {
  if (p.name === "baas_request") return baasRequest();
  if (p.name === "baas_at") return fc.constant(P.token);
  // Held requests: keep documented waits short (the per-request timeout is for hangs, not for waits).
  if (p.name === "wait") return fc.oneof(fc.integer({ min: 0, max: 50 }).map(String), weirdText);
  if (p.name === "appId") return fc.oneof(fc.constant(P.app), weirdText);
  if (p.name === "account") return fc.oneof(fc.constant(P.publicKey), weirdText);
  if (p.name === "since")
    return fc.oneof(
      fc.constant("m-1"),
      fc.date().map((d) => d.toISOString()),
      weirdText,
    );
  return fc.oneof(
    { weight: 3, arbitrary: fromSchema(p.schema).map((v) => String(v)) },
    { weight: 1, arbitrary: weirdText },
    { weight: 1, arbitrary: fc.constantFrom("-1", "1e400", "0x10", "NaN", "[]", "{}", "true") },
  );
}

const tokenKinds: TokenKind[] = [
  "none",
  "access",
  "refresh",
  "user-access",
  "user-refresh",
  "other-app-access",
  "expired",
  "alg-none",
  "forged-signature",
  "wrong-secret",
  "refresh-as-access",
  "garbage",
  "empty-bearer",
  "basic",
  "huge",
  "extra-segment",
  "bad-payload",
  "claims",
];

const claims = fc.record(
  {
    typ: fc.oneof(fc.constantFrom("access", "refresh"), anyValue),
    sub: fc.oneof(fc.constant(P.user), anyValue),
    baas_domain_id: fc.oneof(fc.constant("@@DOMAIN@@"), anyValue),
    baas_id: anyValue,
    iss: anyValue,
    exp: fc.oneof(fc.integer({ min: 0, max: 4_000_000_000 }), anyValue),
    iat: anyValue,
  },
  { requiredKeys: [] },
);

/** The tokens an App Services operation takes (its route's auth mode), so most cases get past authentication. */
const fittingTokens: Record<string, TokenKind[]> = {};
for (const route of appServicesRoutes) {
  fittingTokens[route.operationId] =
    route.auth === "refresh"
      ? ["refresh", "user-refresh"]
      : route.auth === "access" || route.auth === "stream"
        ? ["access", "user-access"]
        : ["none", "none", "access"];
}

function tokenFor(target: string | null): fc.Arbitrary<TokenSpec> {
  const fitting = (target && fittingTokens[target]) || ["none"];
  const kind = fc.oneof(
    // Mostly a fitting token, so the operation runs; otherwise anything.
    { weight: 3, arbitrary: fc.constantFrom<TokenKind>(...fitting) },
    { weight: 2, arbitrary: fc.constantFrom(...tokenKinds) },
  );
  return fc.record({
    kind,
    claims: fc.option(claims, { nil: undefined }),
    placement: target === "callFunctionStreaming" ? fc.constantFrom("header", "query", "both") : fc.constant("header"),
  }) as fc.Arbitrary<TokenSpec>;
}

// ---------------------------------------------------------------------------------------------
// Body corruption

const injection: fc.Arbitrary<Injection> = fc.oneof(
  fc
    .constantFrom(
      '"__proto__":{"polluted":true}',
      '"constructor":{"prototype":{"polluted":true}}',
      '"__proto__":null',
      '"a":{"__proto__":{"polluted":true}}',
    )
    .map((payload) => ({ kind: "proto" as const, payload })),
  fc.nat({ max: 400 }).map((keep) => ({ kind: "truncate" as const, keep })),
  fc
    .constantFrom("}", "]", ",", "garbage", "\u0000", "{}", ' "x"')
    .map((garbage) => ({ kind: "trailing" as const, garbage })),
  fc.constant({ kind: "duplicate-key" as const }),
);

/** A value with one of its fields (at any depth) replaced, dropped, or given a hostile sibling. */
function mutateValue(value: unknown): fc.Arbitrary<unknown> {
  return fc
    .record({
      at: fc.nat(),
      how: fc.constantFrom("replace", "drop", "add"),
      key: fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("$where", "$oid", "_id", "toString", "valueOf")),
      replacement: fc.oneof(
        anyValue,
        fc.constantFrom(null, true, 0, -1, 1e308, "", [], {}, [[[[]]]]),
        fc.string({ unit: "binary", maxLength: 100 }),
        mongoOperators,
      ),
    })
    .map(({ at, how, key, replacement }) => {
      const copy = structuredClone(value);
      const holders: Record<string, unknown>[] = [];
      const walk = (v: unknown, depth: number) => {
        if (v === null || typeof v !== "object" || depth > 8) return;
        if (!Array.isArray(v)) holders.push(v as Record<string, unknown>);
        for (const child of Object.values(v as object)) walk(child, depth + 1);
      };
      walk(copy, 0);
      const holder = holders[at % Math.max(1, holders.length)];
      if (!holder) return replacement;
      const keys = Object.keys(holder);
      const existing = keys[at % Math.max(1, keys.length)];
      if (how === "drop" && existing !== undefined) delete holder[existing];
      else if (how === "replace" && existing !== undefined) holder[existing] = replacement;
      else holder[key] = replacement;
      return copy;
    });
}

function bodyFor(target: string): fc.Arbitrary<BodySpec> {
  const spec = operations.get(target)!;
  const content = spec.operation.requestBody?.content ?? {};
  if (content["multipart/form-data"]) return multipartBody();
  const media = content["application/json"] as
    | { schema?: Record<string, unknown>; examples?: Record<string, { value: unknown }> }
    | undefined;
  const examples = Object.values(media?.examples ?? {}).map((e) => e.value);
  const valid = fc.oneof(
    ...(examples.length > 0 ? [{ weight: 2, arbitrary: fc.constantFrom(...examples) }] : []),
    { weight: 2, arbitrary: fromSchema(media?.schema) },
    ...(semanticBodies[target] ? [{ weight: 4, arbitrary: semanticBodies[target] }] : []),
  );
  const json = (value: fc.Arbitrary<unknown>, inject: fc.Arbitrary<Injection | null>) =>
    fc.record({ kind: fc.constant("json" as const), value, inject });
  return fc.oneof(
    { weight: 5, arbitrary: json(valid, fc.constant(null)) },
    { weight: 5, arbitrary: json(valid.chain(mutateValue), fc.constant(null)) },
    { weight: 2, arbitrary: json(valid, injection) },
    { weight: 1, arbitrary: json(anyValue, fc.constant(null)) },
    { weight: 1, arbitrary: fc.constant({ kind: "none" as const }) },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          fc.string({ unit: "binary", maxLength: 200 }),
          fc.constantFrom(
            "",
            " ",
            "null",
            "[]",
            '"x"',
            "1",
            "{",
            '{"a":',
            "\ufeff{}",
            "{'a':1}",
            "NaN",
            '{"a":1}{"b":2}',
          ),
        )
        .map((text) => ({ kind: "text" as const, text })),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("deep" as const),
        depth: fc.constantFrom(50, 100, 127, 128, 129, 1000, 200_000),
        open: fc.constantFrom("[" as const, "{" as const),
      }),
    },
    {
      // Rare: big bodies cost time (18 MB is the limit; one past it must be refused with 413).
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant("huge" as const),
        bytes: fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(60 * 1024, 200 * 1024, 1024 * 1024) },
          { weight: 1, arbitrary: fc.constantFrom(18 * 1024 * 1024 - 4096, 18 * 1024 * 1024 + 1) },
        ),
        shape: fc.constantFrom("string-field" as const, "garbage" as const, "array" as const),
      }),
    },
  );
}

function multipartBody(): fc.Arbitrary<BodySpec> {
  const field = (name: string, value: fc.Arbitrary<string>) => value.map((v) => ({ name, value: v }));
  const sdkFields = fc.tuple(
    field("user_id", fc.oneof(fc.constant(P.publicKey), fc.constant("local-public-key"), weirdText)),
    field("service_id", fc.oneof(fc.constant("local_service"), weirdText)),
    field("template_id", fc.oneof(fc.constantFrom("local_template", "contact_form"), weirdText)),
    field("to_email", fc.oneof(fc.emailAddress(), weirdText)),
    field("message", fc.oneof(fc.string(), fc.constant("x".repeat(51 * 1024)))),
  );
  const extra = fc.array(
    fc.oneof(
      fc.record({ name: weirdText, value: fc.string({ unit: "binary", maxLength: 100 }) }),
      fc.record({
        name: fc.constantFrom("attachment", "file", "__proto__"),
        value: fc.string({ unit: "binary", maxLength: 2000 }),
        filename: fc.oneof(fc.constantFrom("a.txt", "../../x", "", "\u0000.pdf", 'a"b.txt'), weirdText),
        contentType: fc.constantFrom("text/plain", "application/octet-stream", "image/png", "x"),
      }),
    ),
    { maxLength: 4 },
  );
  return fc.record({
    kind: fc.constant("multipart" as const),
    parts: fc.tuple(sdkFields, extra).map(([sdk, more]) => [...more, ...sdk] as FormPart[]),
    corruption: fc.oneof(
      { weight: 4, arbitrary: fc.constant<MultipartCorruption>("none") },
      {
        weight: 4,
        arbitrary: fc.constantFrom<MultipartCorruption>(
          "no-final-boundary",
          "wrong-boundary",
          "no-boundary-param",
          "truncated",
          "bare-lf",
          "no-disposition",
          "too-many-parts",
        ),
      },
    ),
  });
}

// ---------------------------------------------------------------------------------------------
// Whole requests

function operationCase(target: string): fc.Arbitrary<FuzzCase> {
  const spec = operations.get(target)!;
  const shared = (documents[spec.document].paths[spec.path]?.parameters ?? []) as Parameter[];
  const parameters = [...shared, ...((spec.operation.parameters ?? []) as Parameter[])];
  const pathParams = parameters.filter((p) => p.in === "path");
  const queryParams = parameters.filter((p) => p.in === "query");
  const hasBody = spec.operation.requestBody !== undefined;
  const documentedType = spec.requestMediaTypes[0] ?? null;
  const paramValues = fc.tuple(...pathParams.map((p) => pathValues[p.name] ?? weirdText.map(encodePart)));
  const query = fc.tuple(
    ...queryParams.map((p) => fc.option(queryValue(p), { nil: undefined, freq: p.required ? 8 : 2 })),
  );
  const extraQuery = fc.array(fc.tuple(fc.constantFrom("x", "__proto__", "baas_at", "link"), weirdText), {
    maxLength: 1,
  });
  return fc
    .record({
      params: paramValues,
      query,
      extraQuery,
      token: tokenFor(target),
      body: hasBody
        ? bodyFor(target)
        : fc.oneof(
            { weight: 8, arbitrary: fc.constant({ kind: "none" } as BodySpec) },
            { weight: 1, arbitrary: bodyFor("createApp") },
          ),
      contentType: fc.oneof(
        { weight: 12, arbitrary: fc.constant(documentedType) },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            null,
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/json; charset=utf-16",
            "application/json;charset=utf-8",
            "multipart/form-data",
            "application/xml",
            "application/json, text/plain",
          ),
        },
      ),
      origin: fc.oneof(
        { weight: 5, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom("http://127.0.0.1:5173", "https://evil.example", "null") },
      ),
    })
    .map(({ params, query: values, extraQuery: extra, token, body, contentType, origin }) => {
      let path = spec.path;
      pathParams.forEach((p, i) => {
        path = path.replace(`{${p.name}}`, params[i] as string);
      });
      const q: [string, string][] = [];
      queryParams.forEach((p, i) => {
        const v = values[i];
        if (v !== undefined) q.push([p.name, v]);
      });
      q.push(...extra);
      const bodyType =
        body.kind === "multipart" ? "multipart/form-data" : body.kind === "none" ? null : "application/json";
      return {
        target,
        mutation: `${body.kind}${body.kind === "json" && body.inject ? `+${body.inject.kind}` : ""}/${token.kind}`,
        method: spec.method,
        path,
        query: q,
        token,
        // A body's own type unless the case picked a wrong one on purpose.
        contentType: contentType === documentedType ? (bodyType ?? documentedType) : contentType,
        origin,
        body,
      };
    });
}

/** Requests no operation has: unknown paths, wrong methods on known ones, path tricks. */
const unmatchedCase: fc.Arbitrary<FuzzCase> = fc
  .record({
    method: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
    path: fc.oneof(
      fc.constantFrom(
        "/api/client/v2.0/app/@@APP@@/nothing",
        "/api/client/v2.0/app/@@APP@@/functions/call/extra",
        "/api/client/v2.0/auth/profile/",
        "/api/client/v2.0/",
        "/api/client/v2.0/app//location",
        "/api/v1.0/email/nothing",
        "/api/v1.0/email/send/",
        "/_mock/v1/nothing",
        "/_mock/v1/apps/@@APP@@/users/@@USER@@/nothing",
        "/_mock/v1/apps/%2e%2e/%2e%2e",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/elsewhere",
        "//",
        "/api/client/v2.0/app/@@APP@@/location%00",
        "/api/client/v2.0/app/@@APP@@/location%",
        "/api/v1.0/email/send%",
        "/_mock/v1/apps/@@APP@@/%ZZ",
      ),
      fc.string({ unit: "binary", maxLength: 30 }).map((s) => `/api/client/v2.0/${encodeURIComponent(s)}/x/y`),
    ),
  })
  .filter(({ method, path }) => {
    // Keep only requests that really match no route (e.g. not DELETE /auth/profile... which does not exist either).
    const known = [...operations.values()].some(
      (o) =>
        o.method === method &&
        new RegExp(`^${o.path.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path.replace(/@@[A-Z_]+@@/g, "x")),
    );
    return !known;
  })
  .map(({ method, path }) => ({
    target: null,
    mutation: "unmatched",
    method,
    path,
    query: [],
    token: { kind: "access", placement: "header" } as TokenSpec,
    contentType: method === "GET" ? null : "application/json",
    origin: null,
    body: method === "GET" ? ({ kind: "none" } as BodySpec) : ({ kind: "json", value: {}, inject: null } as BodySpec),
  }));

export const operationIds = [...operations.keys()];

/** One fuzz case: an operation of any of the three documents (every one equally likely), or an unmatched route. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { weight: 19, arbitrary: fc.constantFrom(...operationIds).chain(operationCase) },
  { weight: 1, arbitrary: unmatchedCase },
  { weight: 2, arbitrary: semanticCase },
);
