/**
 * Extended JSON that the service's reader (the Go driver's) refuses and the bson library reads its
 * own way, changing the data silently — base64 that is not base64 or lacks its padding, a `$date`
 * string that is not an RFC 3339 date-time or names no day, numbers' text that `strconv` does not
 * read, a type's object with more or fewer keys or parts than its own, `$minKey`/`$maxKey` other
 * than 1, `$undefined` other than true — is refused in that reader's words wherever a client's
 * Extended JSON comes in: MongoDB actions, function arguments (small and large), the Data API, the
 * control API. What it accepts still comes in as before.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { holdsMarks, strictFormMarkers, strictFormProblem, strictFormProblemIn } from "../../src/data/strict-forms.ts";
import { anonymousLogin, call, callAppFunction, emailUser, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";

let app: FastifyInstance;
let appId: string;
let token: string;
beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newOpenApp(app, {
    dataApi: { versions: ["v1"], returnType: "EJSON" },
    functions: { echo: { source: "exports = (value, pad) => value;" } },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

/** Runs `work`, and counts the turns of the event loop other work had meanwhile. */
async function turnsDuring<T>(work: () => Promise<T>): Promise<[T, number]> {
  let turns = 0;
  let counting = true;
  const count = () => {
    if (!counting) return;
    turns++;
    setImmediate(count);
  };
  setImmediate(count);
  const result = await work();
  counting = false;
  return [result, turns];
}

const refused: [string, unknown, string][] = [
  ["characters that are not base64", { $binary: { base64: "!!", subType: "00" } }, "invalid $binary base64 string: !!"],
  ["base64url", { $binary: { base64: "-_8=", subType: "00" } }, "invalid $binary base64 string: -_8="],
  ["base64 without its padding", { $binary: { subType: "00", base64: "AQI" } }, "invalid $binary base64 string: AQI"],
  ["a day that is not", { $date: "2024-02-30T00:00:00Z" }, "invalid $date value string: 2024-02-30T00:00:00Z"],
  ["a date without its time", { $date: "2024-01-01" }, "invalid $date value string: 2024-01-01"],
  ["an hour past 23", { $date: "2024-01-01T24:00:00Z" }, "invalid $date value string: 2024-01-01T24:00:00Z"],
  ["a time without its zone", { $date: "2024-01-01T10:00:00" }, "invalid $date value string: 2024-01-01T10:00:00"],
  // (Go's time.Parse matches the layout's T and Z as written.)
  ["a lowercase t", { $date: "2024-01-01t10:00:00Z" }, "invalid $date value string: 2024-01-01t10:00:00Z"],
  ["a lowercase z", { $date: "2024-01-01T10:00:00z" }, "invalid $date value string: 2024-01-01T10:00:00z"],
  ["a $minKey of 0", { $minKey: 0 }, "$minKey value must be 1, but instead is 0"],
  ["a $maxKey of true", { $maxKey: true }, "invalid JSON input; expected value for max key"],
  // (The reader's own spelling.)
  ["an $undefined of false", { $undefined: false }, "$undefined balue boolean should be true, but instead is false"],
  ["a double past the range", { $numberDouble: "-1e400" }, 'strconv.ParseFloat: parsing "-1e400": value out of range'],
  // Numbers in text that are not Go's: the library cut, wrapped or guessed them.
  [
    "a $numberInt past an int32",
    { $numberInt: "3000000000" },
    "$numberInt value should be int32 but instead is int64: 3000000000",
  ],
  ["a $numberInt with a fraction", { $numberInt: "1.5" }, 'strconv.ParseInt: parsing "1.5": invalid syntax'],
  ["a $numberInt with a space", { $numberInt: " 5" }, 'strconv.ParseInt: parsing " 5": invalid syntax'],
  ["a $numberInt holding a quote", { $numberInt: '"' }, 'strconv.ParseInt: parsing "\\"": invalid syntax'],
  ["a $numberInt given as a number", { $numberInt: 1.5 }, "invalid JSON input; expected value for 32-bit integer"],
  [
    "a $numberLong past an int64",
    { $numberLong: "9223372036854775808" },
    'strconv.ParseInt: parsing "9223372036854775808": value out of range',
  ],
  ["a $numberLong with a fraction", { $numberLong: "1.5" }, 'strconv.ParseInt: parsing "1.5": invalid syntax'],
  [
    "a $numberDouble with more after it",
    { $numberDouble: "1.5abc" },
    'strconv.ParseFloat: parsing "1.5abc": invalid syntax',
  ],
  ["an empty $numberDouble", { $numberDouble: "" }, 'strconv.ParseFloat: parsing "": invalid syntax'],
  [
    "a $binary subtype that is not hex",
    { $binary: { base64: "AA==", subType: "zz" } },
    "invalid $binary subType string: zz",
  ],
  // A type's key first and more keys after it: the library kept the type and dropped the rest.
  [
    "a key after $numberInt's",
    { $numberInt: "5", z: 1 },
    "invalid JSON input; expected } after value for 32-bit integer",
  ],
  [
    "a key after $oid's",
    { $oid: "65a1b2c3d4e5f60718293a4b", x: 1 },
    "invalid JSON input; expected } after value for objectID",
  ],
  [
    "$numberInt after $numberLong",
    { $numberLong: "5", $numberInt: "6" },
    "invalid JSON input; expected } after value for 64-bit integer",
  ],
  [
    "a key after $date's",
    { $date: { $numberLong: "1" }, x: 1 },
    "invalid JSON input; expected value and then } for UTC datetime",
  ],
  [
    "a key after $binary's",
    { $binary: { base64: "AA==", subType: "00" }, x: 1 },
    "invalid JSON input; expected 2 key-value pairs and then } for binary",
  ],
  ["a key after $code's", { $code: "x", y: 2 }, "invalid extended JSON: unexpected key y in CodeWithScope object"],
  // A value's wrong type before the key after it, as Go reads them.
  [
    "a number's value as a number, and a key after it",
    { $numberInt: 5, x: 1 },
    "invalid JSON input; expected value for 32-bit integer",
  ],
  // The parts of a two-part form: the library made up what was missing and dropped what was more.
  ["a $binary without its subType", { $binary: { base64: "AA==" } }, "end of document"],
  ["a $binary part of another name", { $binary: { base64: "AA==", x: "00" } }, "invalid key in $binary object: x"],
  ["a third part in a $timestamp", { $timestamp: { t: 1, i: 2, x: 3 } }, "invalid JSON input; expected }"],
  ["a $regularExpression without its options", { $regularExpression: { pattern: "a" } }, "end of document"],
  ["a part beside $date's $numberLong", { $date: { $numberLong: "1", x: 1 } }, "invalid JSON input; expected }"],
  ["a $date part of another name", { $date: { x: "1" } }, "invalid key in $date object: x"],
  ["a $binary as a string (the legacy form)", { $binary: "AA==", $type: "00" }, "invalid JSON input; expected {"],
];

const accepted: [unknown, unknown][] = [
  [{ $binary: { base64: "AQI=", subType: "00" } }, { $binary: { base64: "AQI=", subType: "00" } }],
  [{ $binary: { base64: "", subType: "80" } }, { $binary: { base64: "", subType: "80" } }],
  [{ $date: "2024-02-29T23:59:59.999+01:00" }, { $date: { $numberLong: "1709247599999" } }],
  [{ $date: "2024-01-01T00:00:00.123456Z" }, { $date: { $numberLong: "1704067200123" } }],
  [{ $minKey: 1 }, { $minKey: 1 }],
  // Fields named like a form's parts, outside it: fields.
  [{ base64: "!!", subType: "00", date: "2024-02-30" }, undefined],
  [{ $numberInt: "+5" }, { $numberInt: "5" }],
  [{ $numberInt: "-2147483648" }, { $numberInt: "-2147483648" }],
  [{ $numberLong: "-9223372036854775808" }, { $numberLong: "-9223372036854775808" }],
  [{ $numberDouble: "5.e-1" }, { $numberDouble: "0.5" }],
  [{ $numberDouble: "-.5E-3" }, { $numberDouble: "-0.0005" }],
  [{ $numberDouble: "NaN" }, { $numberDouble: "NaN" }],
  // Code with its scope: the one form with a second key.
  [
    { $code: "x", $scope: { a: 1 } },
    { $code: "x", $scope: { a: { $numberInt: "1" } } },
  ],
];

describe("Extended JSON the service refuses", () => {
  it.each(refused)("a MongoDB action refuses %s", async (_, value, message) => {
    const { response, body } = await mongoAction(app, appId, token, "insertOne", {
      database: "d",
      collection: "strict",
      document: { nested: [{ value }] },
    });
    expect(response.statusCode).toBe(400);
    expect(body.error).toBe(`invalid Extended JSON in arguments: ${message}`);
  });

  it("a function's arguments refuse them, in a small body and in a large one", async () => {
    for (const pad of ["", "p".repeat(300 * 1024)]) {
      for (const [, value, message] of refused) {
        const { response, body } = await callAppFunction(app, appId, token, "echo", [{ value }, pad]);
        expect(response.statusCode).toBe(400);
        expect(body.error).toBe(`invalid Extended JSON in arguments: ${message}`);
      }
    }
  });

  it("the Data API and the control API refuse them", async () => {
    const user = await emailUser(app, appId, "strict@example.com", "secret-1");
    const insertOne = (document: Record<string, unknown>) =>
      call(app, "callDataApi", {
        method: "POST",
        url: `/app/${appId}/endpoint/data/v1/action/insertOne`,
        headers: { "content-type": "application/ejson", authorization: `Bearer ${user.access_token}` },
        payload: JSON.stringify({ dataSource: "mongodb-atlas", database: "d", collection: "strict", document }),
      });
    for (const [, value, message] of refused) {
      const data = await insertOne({ value });
      expect(data.response.statusCode).toBe(400);
      expect(data.body.error).toBe(`invalid request body: ${message}`);
      const control = await call(app, "insertDocuments", {
        method: "POST",
        url: `/_mock/v1/apps/${appId}/data/d/strict`,
        payload: { documents: [{ value }] },
      });
      expect(control.response.statusCode).toBe(400);
      expect(control.body.error).toBe(`invalid Extended JSON: ${message}`);
      const filter = encodeURIComponent(JSON.stringify({ value }));
      const listed = await call(app, "listDocuments", {
        method: "GET",
        url: `/_mock/v1/apps/${appId}/data/d/strict?filter=${filter}`,
      });
      expect(listed.response.statusCode).toBe(400);
      expect(listed.body.error).toBe(`filter: invalid Extended JSON: ${message}`);
    }
    // A large body (read in slices) too.
    const large = await insertOne({
      pad: "p".repeat(300 * 1024),
      raw: { $binary: { base64: "A-_=", subType: "00" } },
    });
    expect(large.response.statusCode).toBe(400);
    expect(large.body.error).toBe("invalid request body: invalid $binary base64 string: A-_=");
    const nothing = await mongoAction(app, appId, token, "count", { database: "d", collection: "strict", query: {} });
    expect(nothing.body).toEqual({ $numberLong: "0" });
  });

  it("accepts what the service reads, as before", async () => {
    for (const [value, stored] of accepted) {
      const inserted = await mongoAction(app, appId, token, "insertOne", {
        database: "d",
        collection: "kept",
        document: { _id: JSON.stringify(value), value },
      });
      expect(inserted.response.statusCode, JSON.stringify(value)).toBe(200);
      const found = await mongoAction(app, appId, token, "findOne", {
        database: "d",
        collection: "kept",
        query: { _id: JSON.stringify(value) },
      });
      expect(found.body.value).toEqual(stored ?? value);
      const echoed = await callAppFunction(app, appId, token, "echo", [value]);
      expect(echoed.response.statusCode, JSON.stringify(value)).toBe(200);
    }
  });

  it("lets other work run while it walks a request's wide body, and finds the form past its slices", async () => {
    const fields = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, { n: i }]));
    // (Walked last: the walk takes the last member first.)
    const body = [{ document: { first: { $binary: { base64: "-", subType: "00" } }, ...fields } }];
    const [problem, turns] = await turnsDuring(() => strictFormProblemIn(JSON.stringify(body), body));
    expect(problem).toBe("invalid $binary base64 string: -");
    expect(turns).toBeGreaterThanOrEqual(5);
    // Without a marker in its text, nothing is walked.
    expect(await strictFormProblemIn("[]", body)).toBeNull();
  });

  it("tests a large text for marks a part at a time, other work running between, and finds one across two parts", async () => {
    // 17 MB of numbers, the text the test took longest over (~270 ms at once, the digits tried one by one).
    const numbers = `[${Array.from({ length: 1_300_000 }, (_, i) => i * 1234567).join(",")}]`;
    const [problem, turns] = await turnsDuring(() => strictFormProblemIn(numbers, null));
    expect(problem).toBeNull();
    expect(turns).toBeGreaterThanOrEqual(5);
    // A mark at the end; one across the seam of the first two parts (256 KiB each); none.
    expect(await holdsMarks(`${numbers.slice(0, -1)},1e400]`)).toBe(true);
    const across = `["${"p".repeat(256 * 1024 - 8)}",{"$binary":{"base64":"AA==","subType":"00"}},"${"p".repeat(300_000)}"]`;
    expect(across.indexOf('"$binary"')).toBe(256 * 1024 - 3);
    expect(await holdsMarks(across)).toBe(true);
    expect(await holdsMarks(across.replace("$binary", "binary"))).toBe(false);
  });

  it("refuses a bare number past a double, which JSON reads as Infinity", async () => {
    /** A function call sent as this text (JSON.stringify cannot write such a number). */
    const sent = (payload: string) =>
      call(app, "callFunction", {
        method: "POST",
        url: `/api/client/v2.0/app/${appId}/functions/call`,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        payload,
      });
    const refusal = "invalid Extended JSON in arguments: a number is past the range of a double: value out of range";
    for (const payload of [
      `{"name":"insertOne","service":"mongodb-atlas","arguments":[{"database":"d","collection":"strict","document":{"n":1e400}}]}`,
      `{"name":"echo","arguments":[${"9".repeat(400)}]}`,
      // A large body, which the function's process reads as sent.
      `{"name":"echo","arguments":[-2e308,"${"p".repeat(300 * 1024)}"]}`,
    ]) {
      const { response, body } = await sent(payload);
      expect(response.statusCode, payload.slice(0, 60)).toBe(400);
      expect(body.error).toBe(refusal);
    }
    // Within the range, or as a double's own words for infinity: taken.
    for (const n of ["1.7976931348623157e308", "1e-400", '{"$numberDouble":"Infinity"}']) {
      expect((await sent(`{"name":"echo","arguments":[${n}]}`)).response.statusCode, n).toBe(200);
    }
  });

  it("finds the first problem however deep, and none in documents without such forms", () => {
    let deep: unknown = { $date: "soon" };
    for (let i = 0; i < 50_000; i++) deep = [deep];
    expect(strictFormProblem(deep)).toBe("invalid $date value string: soon");
    expect(strictFormProblem({ a: [{ b: "2024-02-30" }, { $date: { $numberLong: "1" } }] })).toBeNull();
    // What marks a text for the walk: a number's exponent, not an ObjectId's hex ("…61e234…").
    expect(strictFormMarkers.test('{"$oid":"65a1b2c3d4e5f61e234a3a51"}')).toBe(false);
    expect(strictFormMarkers.test('{"n":1e400}')).toBe(true);
    expect(strictFormMarkers.test('{"$numberDouble":"-1.5E+309"}')).toBe(true);
    // A type's value followed by another key, not by its object's end.
    expect(strictFormMarkers.test('{"v":{"$numberInt":"5", "z":1}}')).toBe(true);
    expect(strictFormMarkers.test('{"v":{"$date":{"$numberLong":"1"},"x":1}}')).toBe(true);
    expect(strictFormMarkers.test('[{"$numberInt":"1"},{"$oid":"65a1b2c3d4e5f60718293a4b"}]')).toBe(false);
  });
});
