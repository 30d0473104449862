/**
 * MongoDB's date expressions (date-operators.ts, calendar.ts): formats, ISO weeks, time zones,
 * date arithmetic, truncation and differences, parsing — with the answers of MongoDB's own date
 * tests where they give one.
 */
import { Decimal128, Long } from "bson";
import { describe, expect, it } from "vitest";
import { type Document, toEJSON } from "../../src/data/documents.ts";
import { aggregate } from "../../src/data/query-engine.ts";

const at = (iso: string) => new Date(iso);
/** `expr` evaluated over one document holding `fields`, as Extended JSON (or the refusal). */
function value(expr: unknown, fields: Document = {}): unknown {
  try {
    const [doc] = aggregate([{ _id: 1, ...fields }], [{ $project: { _id: 0, v: expr } }]);
    return toEJSON(doc?.v);
  } catch (error) {
    return `ERR ${(error as Error).message}`;
  }
}
const date = (expr: unknown, fields?: Document) => {
  const out = value(expr, fields) as { $date?: { $numberLong: string } } | string;
  return typeof out === "string" ? out : new Date(Number(out.$date!.$numberLong)).toISOString();
};

describe("$dateToString", () => {
  it("writes every specifier as MongoDB does", () => {
    const d = at("2024-01-01T03:04:05.678Z");
    expect(value({ $dateToString: { date: d, format: "%Y|%m|%d|%H|%M|%S|%L|%j|%w|%u|%U|%V|%G|%Z|%z|%%|%b|%B" } })).toBe(
      "2024|01|01|03|04|05|678|001|2|1|00|01|2024|0|+0000|%|Jan|January",
    );
    expect(value({ $dateToString: { date: at("2017-01-01T00:00:00Z"), format: "%Y-W%w-%U, ISO: %G-W%u-%V" } })).toBe(
      "2017-W1-01, ISO: 2016-W7-52",
    );
    expect(value({ $dateToString: { date: at("2024-12-30T23:59:59Z"), format: "%G-W%V-%u %U %j" } })).toBe(
      "2025-W01-1 52 365",
    );
  });

  it("writes the date in a time zone, named or as an offset", () => {
    const format = "%Y-%m-%d %H:%M:%S %z (%Z minutes)";
    expect(
      value({ $dateToString: { date: at("2017-07-04T14:56:42.911Z"), format, timezone: "Australia/Eucla" } }),
    ).toBe("2017-07-04 23:41:42 +0845 (525 minutes)");
    expect(value({ $dateToString: { date: at("2024-01-01T03:04:05Z"), format: "%H:%M", timezone: "+05:30" } })).toBe(
      "08:34",
    );
    expect(value({ $dateToString: { date: at("2024-01-01T03:04:05.678Z"), timezone: "America/New_York" } })).toBe(
      "2023-12-31T22:04:05.678",
    );
    expect(value({ $dateToString: { date: at("2024-01-01T03:04:05.678Z"), timezone: "UTC" } })).toBe(
      "2024-01-01T03:04:05.678Z",
    );
  });

  it("answers onNull for a missing date, and MongoDB's refusals", () => {
    expect(value({ $dateToString: { date: "$nothing", onNull: "none" } })).toBe("none");
    expect(value({ $dateToString: { date: "$nothing" } })).toBeNull();
    expect(value({ $dateToString: { date: "2024", format: "%Y" } })).toBe(
      "ERR can't convert from BSON type string to Date",
    );
    expect(value({ $dateToString: { date: at("2024-01-01"), format: "%Y%" } })).toBe(
      "ERR Unmatched '%' at end of format string",
    );
    expect(value({ $dateToString: { date: at("2024-01-01"), format: "%n" } })).toBe(
      "ERR Invalid format character '%n' in format string",
    );
    expect(value({ $dateToString: { date: at("2024-01-01"), timezone: "Mars/Olympus" } })).toBe(
      'ERR unrecognized time zone identifier: "Mars/Olympus"',
    );
  });
});

describe("date parts", () => {
  it("ISO week-numbering years of late-December days, as a long", () => {
    expect(value({ $isoWeekYear: at("2024-12-30T12:00:00Z") })).toEqual({ $numberLong: "2025" });
    expect(value({ $isoWeek: at("2024-12-30T12:00:00Z") })).toEqual({ $numberInt: "1" });
    expect(value({ $week: at("2023-01-01T12:00:00Z") })).toEqual({ $numberInt: "1" });
    expect(value({ $dayOfWeek: { date: at("2024-01-01T03:00:00Z"), timezone: "America/New_York" } })).toEqual({
      $numberInt: "1",
    });
    expect(value({ $dateToParts: { date: at("2024-12-30T23:59:59Z"), iso8601: true } })).toEqual({
      isoWeekYear: { $numberInt: "2025" },
      isoWeek: { $numberInt: "1" },
      isoDayOfWeek: { $numberInt: "1" },
      hour: { $numberInt: "23" },
      minute: { $numberInt: "59" },
      second: { $numberInt: "59" },
      millisecond: { $numberInt: "0" },
    });
  });

  it("refuses what is no date", () => {
    expect(value({ $year: "2024" })).toBe("ERR can't convert from BSON type string to Date");
    expect(value({ $year: { date: at("2024-01-01"), zone: "UTC" } })).toBe('ERR unrecognized option to $year: "zone"');
  });
});

describe("$dateAdd, $dateSubtract, $dateDiff and $dateTrunc", () => {
  it("adds months up to the end of shorter months, in the zone's wall time", () => {
    expect(date({ $dateAdd: { startDate: at("2024-01-31T00:00:00Z"), unit: "month", amount: 1 } })).toBe(
      "2024-02-29T00:00:00.000Z",
    );
    const paris = { startDate: at("2020-10-24T18:10:00Z"), timezone: "Europe/Paris" };
    expect(date({ $dateAdd: { ...paris, unit: "hour", amount: 24 } })).toBe("2020-10-25T18:10:00.000Z");
    expect(date({ $dateAdd: { ...paris, unit: "day", amount: 1 } })).toBe("2020-10-25T19:10:00.000Z");
    expect(
      date({ $dateAdd: { startDate: at("2021-01-30T23:30:00Z"), unit: "month", amount: 1, timezone: "Europe/Paris" } }),
    ).toBe("2021-02-27T23:30:00.000Z");
    const end = { startDate: at("2021-01-31T03:00:00Z"), unit: "month", amount: 2 };
    expect(date({ $dateSubtract: { ...end, timezone: "America/New_York" } })).toBe("2020-12-01T03:00:00.000Z");
    expect(date({ $dateSubtract: end })).toBe("2020-11-30T03:00:00.000Z");
    expect(
      date({
        $dateAdd: { startDate: at("2024-03-09T07:30:00Z"), unit: "day", amount: 1, timezone: "America/New_York" },
      }),
    ).toBe("2024-03-10T07:30:00.000Z");
  });

  it("counts the unit boundaries crossed, as a long", () => {
    const span = { startDate: at("2024-01-01T03:04:05Z"), endDate: at("2024-12-30T23:59:59Z") };
    expect(value({ $dateDiff: { ...span, unit: "day" } })).toEqual({ $numberLong: "364" });
    expect(value({ $dateDiff: { ...span, unit: "week" } })).toEqual({ $numberLong: "52" });
    expect(value({ $dateDiff: { ...span, unit: "month" } })).toEqual({ $numberLong: "11" });
    const night = { startDate: at("2020-11-01T18:23:36Z"), endDate: at("2020-11-02T00:00:00Z"), unit: "hour" };
    expect(value({ $dateDiff: night })).toEqual({ $numberLong: "6" });
    expect(value({ $dateDiff: { ...night, timezone: "America/New_York" } })).toEqual({ $numberLong: "6" });
    expect(value({ $dateDiff: { ...night, unit: "century" } })).toBe(
      "ERR $dateDiff parameter 'unit' value cannot be recognized as a time unit: century",
    );
  });

  it("truncates to bins counted from 2000-01-01 in the zone", () => {
    expect(date({ $dateTrunc: { date: at("2020-11-01T18:23:36Z"), unit: "hour", binSize: 2 } })).toBe(
      "2020-11-01T18:00:00.000Z",
    );
    expect(
      date({
        $dateTrunc: { date: at("2021-12-01T18:23:36Z"), unit: "hour", binSize: 4, timezone: "America/New_York" },
      }),
    ).toBe("2021-12-01T17:00:00.000Z");
    expect(date({ $dateTrunc: { date: at("2021-02-15T12:00:00Z"), unit: "week" } })).toBe("2021-02-14T00:00:00.000Z");
    expect(
      date({
        $dateTrunc: {
          date: at("2000-01-30T18:00:00Z"),
          unit: "week",
          binSize: 2,
          timezone: "America/New_York",
          startOfWeek: "monday",
        },
      }),
    ).toBe("2000-01-17T05:00:00.000Z");
    expect(date({ $dateTrunc: { date: at("2020-01-30T18:59:00Z"), unit: "minute", binSize: 15 } })).toBe(
      "2020-01-30T18:45:00.000Z",
    );
    expect(
      date({ $dateTrunc: { date: at("2024-01-01T03:04:05Z"), unit: "month", timezone: "America/New_York" } }),
    ).toBe("2023-12-01T05:00:00.000Z");
  });
});

describe("$add and $subtract of dates and numbers", () => {
  // jstests/aggregation/expressions/add_with_date.js and add_subtract_dates.js.
  const fields = {
    decimalVal: Decimal128.fromString("819.5359123621083"),
    doubleVal: 819.536,
    int64Val: Long.fromNumber(820),
    dateVal: at("2019-01-30T07:30:10.137Z"),
    overflowInt64: Long.MAX_VALUE,
  };
  const add = (...args: unknown[]) => date({ $add: args }, fields);
  const subtract = (a: unknown, b: unknown) => date({ $subtract: [a, b] }, fields);

  it("rounds each number to whole milliseconds: a double half away from zero, a Decimal128 half to even", () => {
    for (const amount of ["$decimalVal", "$doubleVal", "$int64Val"]) {
      expect(add("$dateVal", amount), amount).toBe("2019-01-30T07:30:10.957Z");
      expect(add(amount, "$dateVal"), amount).toBe("2019-01-30T07:30:10.957Z");
    }
    // The numbers before the date are summed first; each after it is rounded as it is added.
    expect(add("$dateVal", "$decimalVal", "$doubleVal", "$int64Val")).toBe("2019-01-30T07:30:12.597Z");
    expect(add("$decimalVal", "$dateVal", "$doubleVal", "$int64Val")).toBe("2019-01-30T07:30:12.597Z");
    expect(add("$decimalVal", "$doubleVal", "$int64Val", "$dateVal")).toBe("2019-01-30T07:30:12.596Z");
    expect([0.5, -0.5, 1.5, -1.5].map((ms) => add("$dateVal", ms))).toEqual([
      "2019-01-30T07:30:10.138Z",
      "2019-01-30T07:30:10.136Z",
      "2019-01-30T07:30:10.139Z",
      "2019-01-30T07:30:10.135Z",
    ]);
    expect(["0.5", "1.5", "2.5"].map((ms) => add("$dateVal", Decimal128.fromString(ms)))).toEqual([
      "2019-01-30T07:30:10.137Z",
      "2019-01-30T07:30:10.139Z",
      "2019-01-30T07:30:10.139Z",
    ]);
    expect(subtract("$dateVal", 1.5)).toBe("2019-01-30T07:30:10.135Z");
    expect(subtract("$dateVal", -0.5)).toBe("2019-01-30T07:30:10.138Z");
    expect(subtract("$dateVal", Decimal128.fromString("2.5"))).toBe("2019-01-30T07:30:10.135Z");
  });

  it("adds Int64 amounts past 2^53 exactly", () => {
    const far = Long.fromString("2397083434877565865");
    const back = Long.fromString("-2397083434877565864");
    expect(add("$dateVal", far, "$doubleVal", back)).toBe("2019-01-30T07:30:10.958Z");
  });

  it("refuses a sum past 64 bits, a NaN or an infinity as an overflow, never an invalid date", () => {
    for (const amount of [
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Decimal128.fromString("NaN"),
      Decimal128.fromString("1e5000"),
    ])
      expect(add("$dateVal", amount), String(amount)).toBe("ERR date overflow");
    expect(add("$dateVal", "$overflowInt64")).toBe("ERR date overflow");
    expect(subtract("$dateVal", Number.NaN)).toBe("ERR date overflow");
    expect(subtract("$dateVal", Long.MIN_VALUE)).toBe("ERR date overflow");
    // (Past the ±8.64e15 ms a JavaScript date holds, too.)
    expect(add("$dateVal", 8.64e15)).toBe("ERR date overflow");
  });

  it("answers the milliseconds between two dates as a long, and refuses other types in order", () => {
    expect(value({ $subtract: ["$dateVal", at("2019-01-30T07:30:10.000Z")] }, fields)).toEqual({ $numberLong: "137" });
    expect(value({ $subtract: ["$dateVal", null] }, fields)).toBeNull();
    expect(value({ $subtract: ["$dateVal", "x"] }, fields)).toBe("ERR can't $subtract string from date");
    expect(value({ $subtract: [1, "$dateVal"] }, fields)).toBe("ERR can't $subtract date from int");
    expect(value({ $add: ["$dateVal", 1, "$dateVal"] }, fields)).toBe(
      "ERR only one date allowed in an $add expression",
    );
    expect(value({ $add: ["x", null] })).toBe("ERR $add only supports numeric or date types, not string");
    expect(value({ $add: [null, "x"] })).toBeNull();
  });
});

describe("$dateFromParts and $dateFromString", () => {
  it("carries parts past their range, and reads ISO weeks", () => {
    expect(date({ $dateFromParts: { year: 2024, month: 14, day: 1 } })).toBe("2025-02-01T00:00:00.000Z");
    expect(date({ $dateFromParts: { year: 2017, month: 1, day: 61 } })).toBe("2017-03-02T00:00:00.000Z");
    expect(date({ $dateFromParts: { isoWeekYear: 2025, isoWeek: 1, isoDayOfWeek: 1 } })).toBe(
      "2024-12-30T00:00:00.000Z",
    );
    expect(value({ $dateFromParts: { year: 0 } })).toBe(
      "ERR 'year' must evaluate to an integer in the range 1 to 9999, found 0",
    );
    expect(value({ $dateFromParts: { year: 2024, millisecond: 1e20 } })).toBe(
      "ERR Overflow casting from a lower-precision duration to a higher-precision duration",
    );
    expect(value({ $dateTrunc: { date: at("2024-01-01"), unit: "hour", binSize: 1e18 } })).toBe(
      "ERR dateTrunc overflowed",
    );
    expect(value({ $dateFromParts: { year: 2024, isoWeek: 2 } })).toBe(
      "ERR $dateFromParts does not allow mixing natural dates with ISO dates",
    );
  });

  it("reads ISO 8601 and the written forms, wall times in the zone", () => {
    expect(date({ $dateFromString: { dateString: "2024-03-10 10:20:30" } })).toBe("2024-03-10T10:20:30.000Z");
    expect(date({ $dateFromString: { dateString: "2017-07-04T11:56:02.8Z" } })).toBe("2017-07-04T11:56:02.800Z");
    expect(date({ $dateFromString: { dateString: "2024-03-10T10:20:30+02:00" } })).toBe("2024-03-10T08:20:30.000Z");
    expect(date({ $dateFromString: { dateString: "July 4th, 2017" } })).toBe("2017-07-04T00:00:00.000Z");
    expect(date({ $dateFromString: { dateString: "Sun, 10 Mar 2024 10:20:30 GMT" } })).toBe("2024-03-10T10:20:30.000Z");
    expect(date({ $dateFromString: { dateString: "03/10/2024" } })).toBe("2024-03-10T00:00:00.000Z");
    const ny = { timezone: "America/New_York" };
    expect(date({ $dateFromString: { dateString: "2024-03-10T02:30:00", ...ny } })).toBe("2024-03-10T07:30:00.000Z");
    expect(date({ $dateFromString: { dateString: "2024-11-03T01:30:00", ...ny } })).toBe("2024-11-03T06:30:00.000Z");
    expect(date({ $dateFromString: { dateString: "10/03/2024", format: "%d/%m/%Y" } })).toBe(
      "2024-03-10T00:00:00.000Z",
    );
  });

  it("refuses what it cannot read, unless onError answers", () => {
    expect(value({ $dateFromString: { dateString: "not a date" } })).toMatch(
      /^ERR Error parsing date string 'not a date'/,
    );
    expect(value({ $dateFromString: { dateString: "not a date", onError: "x" } })).toBe("x");
    expect(value({ $dateFromString: { dateString: "2017-02-30" } })).toMatch(/The parsed date was invalid/);
    expect(value({ $dateFromString: { dateString: "12:50:53" } })).toBe(
      'ERR an incomplete date/time string has been found, with elements missing: "12:50:53"',
    );
    expect(value({ $dateFromString: { dateString: "2024-03-10T10:20:30Z", timezone: "Europe/Paris" } })).toBe(
      "ERR you cannot pass in a date/time string with time zone information ('Z') together with a timezone argument",
    );
    expect(value({ $dateFromString: { dateString: "2018-01", format: "%Y-%m-%d" } })).toMatch(
      /^ERR Error parsing date string '2018-01'; 7: Not enough data available to satisfy format/,
    );
  });
});
