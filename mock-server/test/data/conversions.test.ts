/**
 * `$convert` and the `$toX` shorthands over every kind of value, as MongoDB 8.0's ExpressionConvert
 * converts (bson-conversions.ts, docs/decisions/0047-conversions.md): its table, its parsing of
 * numeric strings, its narrowing checks, `onError`/`onNull`, and its texts.
 */
import { describe, expect, it } from "vitest";
import { type Document, fromEJSON, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const fields = {
  date: { $date: "2024-03-10T12:30:00.250Z" },
  oid: { $oid: "5ab9cbfa31c2ab715d42129e" },
  ts: { $timestamp: { t: 1, i: 1 } },
  uuid: { $binary: { base64: "ASNFZ4mrze8BI0VniavN7w==", subType: "04" } },
  dec: { $numberDecimal: "2.75" },
  big: { $numberLong: "3000000000" },
};

/** `expr` over one document, as Extended JSON ("missing" when it has no value), or the refusal. */
function value(expr: unknown): unknown {
  try {
    const [out] = aggregate([fromEJSON({ _id: 1, ...fields }) as Document], [
      { $project: { _id: 0, v: fromEJSON(expr) } },
    ] as Document[]);
    return out && "v" in out ? toEJSON(out.v) : "missing";
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const int = (n: number) => ({ $numberInt: String(n) });
const long = (n: string) => ({ $numberLong: n });
const double = (n: string) => ({ $numberDouble: n });
const suffix = "in $convert with no onError value";

describe("strings to numbers", () => {
  it("read integers in base 10 with one sign, nothing else", () => {
    expect(value({ $toInt: "+5" })).toEqual(int(5));
    expect(value({ $toInt: "-0" })).toEqual(int(0));
    expect(value({ $toLong: "3000000000" })).toEqual(long("3000000000"));
    expect(value({ $toInt: "1.5" })).toBe(`ERR Failed to parse number '1.5' ${suffix}: Did not consume whole string.`);
    expect(value({ $toInt: " 1" })).toBe(`ERR Failed to parse number ' 1' ${suffix}: Did not consume whole string.`);
    expect(value({ $toInt: "" })).toBe(`ERR Failed to parse number '' ${suffix}: No digits`);
    expect(value({ $toInt: "2147483648" })).toBe(`ERR Failed to parse number '2147483648' ${suffix}: Overflow`);
    expect(value({ $toLong: "0x10" })).toBe(`ERR Illegal hexadecimal input ${suffix}: 0x10`);
  });

  it("read doubles as strtod does, whole and in range", () => {
    expect(value({ $toDouble: "1e3" })).toEqual(int(1000));
    expect(value({ $toDouble: ".5" })).toEqual(double("0.5"));
    expect(value({ $toDouble: "-Infinity" })).toEqual(double("-Infinity"));
    expect(value({ $toDouble: " 5" })).toBe(`ERR Failed to parse number ' 5' ${suffix}: Leading whitespace`);
    expect(value({ $toDouble: "x" })).toBe(`ERR Failed to parse number 'x' ${suffix}: Did not consume any digits`);
    expect(value({ $toDouble: "12,50" })).toBe(
      `ERR Failed to parse number '12,50' ${suffix}: Did not consume whole string.`,
    );
    expect(value({ $toDouble: "1e400" })).toBe(`ERR Failed to parse number '1e400' ${suffix}: Out of range`);
    expect(value({ $toDouble: "" })).toBe(`ERR Failed to parse number '' ${suffix}: Empty string`);
  });

  it("read decimals in Decimal128's form only", () => {
    expect(value({ $toDecimal: "1.10" })).toEqual({ $numberDecimal: "1.10" });
    expect(value({ $toDecimal: "1e3" })).toEqual({ $numberDecimal: "1E+3" });
    expect(value({ $toDecimal: " 1" })).toBe(
      `ERR Failed to parse number ' 1' ${suffix}: Failed to parse string to decimal`,
    );
  });
});

describe("numbers narrowed", () => {
  it("truncate toward zero after checking the range and refuse NaN and infinities", () => {
    expect(value({ $toInt: -2.9 })).toEqual(int(-2));
    expect(value({ $toInt: "$dec" })).toEqual(int(2));
    expect(value({ $toInt: 2147483647.5 })).toBe(`ERR Conversion would overflow target type ${suffix}: 2.14748e+09`);
    expect(value({ $toInt: 1e300 })).toBe(`ERR Conversion would overflow target type ${suffix}: 1e+300`);
    expect(value({ $toInt: "$big" })).toBe(`ERR Conversion would overflow target type ${suffix}: `);
    expect(value({ $toLong: { $numberDouble: "NaN" } })).toBe(
      `ERR Attempt to convert NaN value to integer type ${suffix}`,
    );
    expect(value({ $toInt: { $numberDecimal: "-Infinity" } })).toBe(
      `ERR Attempt to convert infinity value to integer type ${suffix}`,
    );
  });
});

describe("the table", () => {
  it("makes every string true, and dates, ids and documents too", () => {
    expect(value({ $toBool: "false" })).toBe(true);
    expect(value({ $toBool: "" })).toBe(true);
    expect(value({ $toBool: "$date" })).toBe(true);
    expect(value({ $toBool: { $literal: { a: 1 } } })).toBe(true);
    expect(value({ $toBool: 0 })).toBe(false);
    expect(value({ $toBool: { $numberDecimal: "0.00" } })).toBe(false);
  });

  it("converts dates to longs and doubles but not to ints, and back from longs only", () => {
    expect(value({ $toLong: "$date" })).toEqual(long("1710073800250"));
    expect(value({ $toDouble: "$date" })).toEqual(long("1710073800250"));
    expect(value({ $toInt: "$date" })).toBe(`ERR Unsupported conversion from date to int ${suffix}`);
    expect(value({ $toDate: "$big" })).toEqual({ $date: { $numberLong: "3000000000" } });
    expect(value({ $toDate: 5 })).toBe(`ERR Unsupported conversion from int to date ${suffix}`);
    expect(value({ $toDate: true })).toBe(`ERR Unsupported conversion from bool to date ${suffix}`);
    expect(value({ $toDate: "$ts" })).toEqual({ $date: { $numberLong: "1000" } });
    expect(value({ $toDate: "$oid" })).toEqual({ $date: { $numberLong: "1522125818000" } });
  });

  it("writes strings as MongoDB writes them", () => {
    expect(value({ $toString: 1234.5678 })).toBe("1234.57");
    expect(value({ $toString: 1e-5 })).toBe("1e-05");
    expect(value({ $toString: { $numberDouble: "-Infinity" } })).toBe("-Infinity");
    expect(value({ $toString: "$date" })).toBe("2024-03-10T12:30:00.250Z");
    expect(value({ $toString: "$oid" })).toBe("5ab9cbfa31c2ab715d42129e");
    expect(value({ $toString: "$dec" })).toBe("2.75");
    expect(value({ $toString: "$uuid" })).toBe("01234567-89ab-cdef-0123-456789abcdef");
    expect(value({ $toString: "$ts" })).toBe(`ERR Unsupported conversion from timestamp to string ${suffix}`);
    expect(value({ $toString: { $literal: [1] } })).toBe(`ERR Unsupported conversion from array to string ${suffix}`);
  });

  it("reads dates, object ids and decimals from strings", () => {
    expect(value({ $toDate: "2024-03-10" })).toEqual({ $date: { $numberLong: "1710028800000" } });
    expect(value({ $toDate: "not a date" })).toBe(
      "ERR Error parsing date string 'not a date'; 0: Unexpected character 'n'",
    );
    expect(value({ $toObjectId: "5AB9CBFA31C2AB715D42129E" })).toEqual({ $oid: "5ab9cbfa31c2ab715d42129e" });
    expect(value({ $toObjectId: "5ab9cbfa31c2ab715d42129z" })).toBe(
      `ERR Failed to parse objectId '5ab9cbfa31c2ab715d42129z' ${suffix}: Invalid character found in hex string: z`,
    );
    expect(value({ $toDecimal: 2.5 })).toEqual({ $numberDecimal: "2.50000000000000" });
  });
});

describe("$convert", () => {
  it("answers onNull for null and missing input, onError for failed conversions only", () => {
    expect(value({ $convert: { input: "$missing", to: "int", onNull: "none" } })).toBe("none");
    expect(value({ $convert: { input: "x", to: "int", onError: "bad" } })).toBe("bad");
    expect(value({ $convert: { input: "x", to: "int", onError: "$$REMOVE" } })).toBe("missing");
    expect(value({ $convert: { input: "x", to: null, onNull: "none" } })).toBeNull();
    expect(value({ $convert: { input: null, to: "bogus", onNull: 1 } })).toBe("ERR Unknown type name: bogus");
    expect(value({ $convert: { input: 1, to: "int", onError: 0, extra: 1 } })).toBe(
      "ERR $convert found an unknown argument: extra",
    );
    expect(value({ $convert: { to: "int" } })).toBe("ERR Missing 'input' parameter to $convert");
  });

  it("takes a target by name or number", () => {
    expect(value({ $convert: { input: "7", to: 16 } })).toEqual(int(7));
    expect(value({ $convert: { input: 7, to: "object", onError: "no" } })).toBe("no");
    expect(value({ $convert: { input: 7, to: 16.5 } })).toBe(
      "ERR In $convert, numeric 'to' argument is not an integer",
    );
    expect(value({ $convert: { input: 7, to: 20 } })).toBe(
      "ERR In $convert, numeric value for 'to' does not correspond to a BSON type: 20",
    );
    expect(value({ $convert: { input: 7, to: true } })).toBe(
      "ERR $convert's 'to' argument must be a string or number, but is bool",
    );
    expect(value({ $convert: { input: "$uuid", to: "string" } })).toBe(
      "ERR Format must be speficied when converting from 'binData' to 'string'",
    );
    expect(value({ $convert: { input: "$uuid", to: "string", format: "hex" } })).toBe(
      "0123456789ABCDEF0123456789ABCDEF",
    );
  });

  it("$toX takes one argument and answers null for null", () => {
    expect(value({ $toInt: ["7"] })).toEqual(int(7));
    expect(value({ $toInt: ["7", "8"] })).toBe("ERR $toInt requires a single argument, got 2");
    expect(value({ $toString: "$missing" })).toBeNull();
  });
});
