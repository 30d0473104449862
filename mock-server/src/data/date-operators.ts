/**
 * MongoDB's date expression operators (8.0), in place of mingo's, which answered the ISO
 * week-numbering year of late-December days as the calendar year (`$isoWeekYear`, `%G`), `%w` from
 * 0, `%%` as nothing, `%U` of late-December days as 1, truncated months in a time zone to the wrong
 * month, added a month to January 31 as March 2, took any `$dateFromString` it could not read (and
 * "2024-03-10 10:20:30") as undefined and ISO-week `$dateFromParts` as year 9999.
 *
 * Time zones and calendar arithmetic are calendar.ts'. Behaviour and error texts follow MongoDB's
 * date code (date_time_support, the date expressions) and its date tests; see
 * docs/decisions/0043-date-operators.md for what `$dateFromString` reads.
 */
import { Long } from "bson";
import { evalExpr } from "mingo/core";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import {
  dayMs,
  fromLocal,
  isoWeekOf,
  isoYearStart,
  type LocalDate,
  localDate,
  minuteMs,
  sundayWeek,
  utc,
  utcDay,
  type Zone,
  zoneOf,
} from "./calendar.ts";
import { type Document, isDocument } from "./documents.ts";
import { shellText } from "./shell-text.ts";
import { keysOf } from "./wide-keys.ts";

// biome-ignore lint/suspicious/noExplicitAny: mingo's operator signatures vary by kind
type AnyFn = (...args: any[]) => any;

const evaluate = (obj: unknown, expr: unknown, options: unknown): unknown => evalExpr(obj, expr, options as never);
export const nullish = (value: unknown): value is null | undefined => value === null || value === undefined;
/** A BSON value's class name (`Long`, `Decimal128`, `Timestamp`, `ObjectId`…), undefined for others. */
export const typeOf = (value: unknown): string | undefined => (value as { _bsontype?: string } | null)?._bsontype;

/** A date, Timestamp or ObjectId as milliseconds since the epoch (MongoDB's coercion to a date). */
export function dateMs(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  if (typeOf(value) === "Timestamp") return (value as { t: number }).t * 1000;
  if (typeOf(value) === "ObjectId") return (value as { getTimestamp(): Date }).getTimestamp().getTime();
  throw errors.mongo(`can't convert from BSON type ${bsonTypeAlias(value)} to Date`);
}

/** Whether a time zone argument is UTC as MongoDB counts it: none, "UTC", or a zero offset. */
const isUtc = (timezone: unknown): boolean =>
  timezone === undefined || timezone === "UTC" || (typeof timezone === "string" && /^[+-]00(:?00)?$/.test(timezone));

const integral = (value: unknown): number | null => {
  if (typeof value === "number") return Number.isInteger(value) ? value : null;
  if (typeOf(value) === "Long") return Number(String(value));
  if (typeOf(value) === "Decimal128") {
    const n = Number(String(value));
    return Number.isInteger(n) ? n : null;
  }
  return null;
};

/** The largest instant a date holds (±8.64e15 ms, JavaScript's bound; MongoDB's is wider). */
const maxInstant = 8.64e15;

/** A date of an instant an operator computed, refused with `overflow` past what a date holds. */
function instant(ms: number, overflow: string): Date {
  if (!Number.isFinite(ms) || Math.abs(ms) > maxInstant) throw errors.mongo(overflow);
  return new Date(ms);
}

/** Checks an operator's object argument: its fields among `allowed`. */
function fieldsOf(name: string, expr: unknown, allowed: readonly string[], notObject: string): Document {
  if (!isDocument(expr)) throw errors.mongo(notObject);
  for (const key of keysOf(expr))
    if (!allowed.includes(key)) throw errors.mongo(`Unrecognized argument to ${name}: ${key}`);
  return expr;
}

// ---------------------------------------------------------------------------------------------
// Date parts: $year … $millisecond, $dayOfYear, $dayOfWeek, $week, $isoWeekYear, $isoWeek, $isoDayOfWeek

function datePart(name: string, compute: (local: LocalDate) => unknown): AnyFn {
  return (obj, expr, options) => {
    let dateExpr = expr;
    let timezoneExpr: unknown;
    if (Array.isArray(expr)) {
      if (expr.length !== 1)
        throw errors.mongo(`${name} accepts exactly one argument if given an array, but was given ${expr.length}`);
      dateExpr = expr[0];
    } else if (isDocument(expr) && !keysOf(expr)[0]?.startsWith("$")) {
      for (const key of keysOf(expr))
        if (key !== "date" && key !== "timezone") throw errors.mongo(`unrecognized option to ${name}: "${key}"`);
      if (!("date" in expr))
        throw errors.mongo(`missing 'date' argument to ${name}, provided: ${name}: ${shellText(expr)}`);
      dateExpr = expr.date;
      timezoneExpr = expr.timezone;
    }
    const date = evaluate(obj, dateExpr, options);
    if (nullish(date)) return null;
    const timezone = timezoneExpr === undefined ? undefined : evaluate(obj, timezoneExpr, options);
    if (timezoneExpr !== undefined && nullish(timezone)) return null;
    const zone = zoneOf(timezone);
    return compute(localDate(dateMs(date), zone));
  };
}

const isoOf = (local: LocalDate) => isoWeekOf(local.year, local.month, local.day);

const datePartOperators: Record<string, AnyFn> = {
  $year: datePart("$year", (d) => d.year),
  $month: datePart("$month", (d) => d.month),
  $dayOfMonth: datePart("$dayOfMonth", (d) => d.day),
  $hour: datePart("$hour", (d) => d.hour),
  $minute: datePart("$minute", (d) => d.minute),
  $second: datePart("$second", (d) => d.second),
  $millisecond: datePart("$millisecond", (d) => d.millisecond),
  $dayOfYear: datePart("$dayOfYear", (d) => d.dayOfYear),
  $dayOfWeek: datePart("$dayOfWeek", (d) => d.dayOfWeek),
  $week: datePart("$week", (d) => sundayWeek(d.dayOfYear, d.dayOfWeek)),
  $isoWeekYear: datePart("$isoWeekYear", (d) => Long.fromNumber(isoOf(d).isoYear)),
  $isoWeek: datePart("$isoWeek", (d) => isoOf(d).isoWeek),
  $isoDayOfWeek: datePart("$isoDayOfWeek", (d) => isoOf(d).isoDay),
};

// ---------------------------------------------------------------------------------------------
// $dateToString

const monthNames = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];

const toStringSpecifiers = new Set("bBdGHjLmMSuUVwYzZ%");
const fromStringSpecifiers = new Set("bBdGHjLmMSuVYzZ%");

/** Checks a format string: each `%` followed by a specifier of `allowed`. */
function checkFormat(format: string, allowed: Set<string>): void {
  for (let i = 0; i < format.length; i++) {
    if (format[i] !== "%") continue;
    if (i === format.length - 1) throw errors.mongo("Unmatched '%' at end of format string");
    const c = format[++i]!;
    if (!allowed.has(c)) throw errors.mongo(`Invalid format character '%${c}' in format string`);
  }
}

const pad = (n: number, width: number) => String(Math.abs(n)).padStart(width, "0");

/** A date in a zone written with a checked format (outputDateWithFormat). */
function formatDate(ms: number, zone: Zone, format: string): string {
  const d = localDate(ms, zone);
  const iso = isoOf(d);
  const inRange = (n: number) => {
    if (n < 0 || n > 9999)
      throw errors.mongo(
        `Could not convert date to string: date component was outside the supported range of 0-9999: ${n}`,
      );
    return pad(n, 4);
  };
  let out = "";
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== "%") {
      out += c;
      continue;
    }
    const spec = format[++i]!;
    switch (spec) {
      case "Y":
        out += inRange(d.year);
        break;
      case "G":
        out += inRange(iso.isoYear);
        break;
      case "m":
        out += pad(d.month, 2);
        break;
      case "d":
        out += pad(d.day, 2);
        break;
      case "H":
        out += pad(d.hour, 2);
        break;
      case "M":
        out += pad(d.minute, 2);
        break;
      case "S":
        out += pad(d.second, 2);
        break;
      case "L":
        out += pad(d.millisecond, 3);
        break;
      case "j":
        out += pad(d.dayOfYear, 3);
        break;
      case "w":
        out += String(d.dayOfWeek);
        break;
      case "u":
        out += String(iso.isoDay);
        break;
      case "U":
        out += pad(sundayWeek(d.dayOfYear, d.dayOfWeek), 2);
        break;
      case "V":
        out += pad(iso.isoWeek, 2);
        break;
      case "b":
        out += monthNames[d.month - 1]!.slice(0, 3);
        break;
      case "B":
        out += monthNames[d.month - 1]!;
        break;
      case "z":
        out += `${d.offset < 0 ? "-" : "+"}${pad(Math.trunc(d.offset / 60), 2)}${pad(d.offset % 60, 2)}`;
        break;
      case "Z":
        out += String(d.offset);
        break;
      default:
        out += "%";
    }
  }
  return out;
}

/** A date as MongoDB writes one as a string (`$toString`, `$toUpper`…): UTC, to the millisecond. */
export const formatDateUtc = (ms: number): string => formatDate(ms, utc, "%Y-%m-%dT%H:%M:%S.%LZ");

const dateToString: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr)) throw errors.mongo("$dateToString only supports an object as its argument");
  const args = fieldsOf("$dateToString", expr, ["date", "format", "timezone", "onNull"], "");
  if (!("date" in args)) throw errors.mongo("Missing 'date' parameter to $dateToString");
  const format = args.format === undefined ? undefined : evaluate(obj, args.format, options);
  if (!nullish(format)) {
    if (typeof format !== "string")
      throw errors.mongo(
        `$dateToString requires that 'format' be a string, found: ${bsonTypeAlias(format)} with value ${shellText(format)}`,
      );
    checkFormat(format, toStringSpecifiers);
  }
  const timezone = args.timezone === undefined ? undefined : evaluate(obj, args.timezone, options);
  const zone = nullish(timezone) ? utc : zoneOf(timezone);
  const date = evaluate(obj, args.date, options);
  if (nullish(date)) return args.onNull === undefined ? null : evaluate(obj, args.onNull, options);
  if (args.timezone !== undefined && nullish(timezone)) return null;
  if (args.format !== undefined && nullish(format)) return null;
  const defaultFormat = isUtc(args.timezone === undefined ? undefined : timezone)
    ? "%Y-%m-%dT%H:%M:%S.%LZ"
    : "%Y-%m-%dT%H:%M:%S.%L";
  return formatDate(dateMs(date), zone, (format as string | undefined) ?? defaultFormat);
};

// ---------------------------------------------------------------------------------------------
// $dateToParts and $dateFromParts

const dateToParts: AnyFn = (obj, expr, options) => {
  const args = fieldsOf(
    "$dateToParts",
    expr,
    ["date", "timezone", "iso8601"],
    "$dateToParts only supports an object as its argument",
  );
  if (!("date" in args)) throw errors.mongo("Missing 'date' parameter to $dateToParts");
  const timezone = args.timezone === undefined ? undefined : evaluate(obj, args.timezone, options);
  if (args.timezone !== undefined && nullish(timezone)) return null;
  const zone = zoneOf(timezone);
  const iso8601 = args.iso8601 === undefined ? false : evaluate(obj, args.iso8601, options);
  if (nullish(iso8601)) return null;
  if (typeof iso8601 !== "boolean")
    throw errors.mongo(`iso8601 must evaluate to a bool, found ${bsonTypeAlias(iso8601)}`);
  const date = evaluate(obj, args.date, options);
  if (nullish(date)) return null;
  const d = localDate(dateMs(date), zone);
  const time = { hour: d.hour, minute: d.minute, second: d.second, millisecond: d.millisecond };
  if (!iso8601) return { year: d.year, month: d.month, day: d.day, ...time };
  const iso = isoOf(d);
  return { isoWeekYear: iso.isoYear, isoWeek: iso.isoWeek, isoDayOfWeek: iso.isoDay, ...time };
};

const calendarParts = ["year", "month", "day"];
const isoParts = ["isoWeekYear", "isoWeek", "isoDayOfWeek"];
const timeParts = ["hour", "minute", "second", "millisecond"];

const dateFromParts: AnyFn = (obj, expr, options) => {
  const args = fieldsOf(
    "$dateFromParts",
    expr,
    [...calendarParts, ...isoParts, ...timeParts, "timezone"],
    "$dateFromParts only supports an object as its argument",
  );
  const natural = calendarParts.some((k) => k in args);
  const iso = isoParts.some((k) => k in args);
  if (!("year" in args) && !("isoWeekYear" in args))
    throw errors.mongo("$dateFromParts requires either 'year' or 'isoWeekYear' to be present");
  if ("year" in args && iso) throw errors.mongo("$dateFromParts does not allow mixing natural dates with ISO dates");
  if ("isoWeekYear" in args && natural)
    throw errors.mongo("$dateFromParts does not allow mixing ISO dates with natural dates");
  const part = (field: string, fallback: number, bounded: boolean): number | null => {
    if (args[field] === undefined) return fallback;
    const value = evaluate(obj, args[field], options);
    if (nullish(value)) return null;
    const n = integral(value);
    if (n === null)
      throw errors.mongo(
        `'${field}' must evaluate to an integer, found ${bsonTypeAlias(value)} with value ${shellText(value)}`,
      );
    if (bounded && (n < -32768 || n > 32767))
      throw errors.mongo(
        `'${field}' must evaluate to a value in the range [-32768, 32767]; value ${n} is not in range`,
      );
    return n;
  };
  const hour = part("hour", 0, true);
  const minute = part("minute", 0, true);
  const second = part("second", 0, false);
  const millisecond = part("millisecond", 0, false);
  const timezone = args.timezone === undefined ? undefined : evaluate(obj, args.timezone, options);
  if (args.timezone !== undefined && nullish(timezone)) return null;
  const zone = zoneOf(timezone);
  const year = (field: string) => {
    const value = part(field, 0, false);
    if (value !== null && (value < 1 || value > 9999))
      throw errors.mongo(`'${field}' must evaluate to an integer in the range 1 to 9999, found ${value}`);
    return value;
  };
  if (hour === null || minute === null || second === null || millisecond === null) return null;
  let ms: number;
  if ("isoWeekYear" in args) {
    const isoYear = year("isoWeekYear");
    const week = part("isoWeek", 1, true);
    const day = part("isoDayOfWeek", 1, true);
    if (isoYear === null || week === null || day === null) return null;
    const start = new Date(isoYearStart(isoYear) + ((week - 1) * 7 + (day - 1)) * dayMs);
    ms = fromLocal(
      zone,
      start.getUTCFullYear(),
      start.getUTCMonth() + 1,
      start.getUTCDate(),
      hour,
      minute,
      second,
      millisecond,
    );
  } else {
    const y = year("year");
    const month = part("month", 1, true);
    const day = part("day", 1, true);
    if (y === null || month === null || day === null) return null;
    ms = fromLocal(zone, y, month, day, hour, minute, second, millisecond);
  }
  return instant(ms, "Overflow casting from a lower-precision duration to a higher-precision duration");
};

// ---------------------------------------------------------------------------------------------
// $dateAdd, $dateSubtract, $dateDiff, $dateTrunc

const units = ["year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond"] as const;
export type Unit = (typeof units)[number];
/** Whether a value names one of MongoDB's time units. */
export const isUnit = (value: unknown): value is Unit => units.includes(value as Unit);
/** A fixed unit's length in milliseconds (a week or less; months and years vary). */
export const unitMs: Partial<Record<Unit, number>> = {
  week: 7 * dayMs,
  day: dayMs,
  hour: 3_600_000,
  minute: minuteMs,
  second: 1000,
  millisecond: 1,
};
const monthsOf: Partial<Record<Unit, number>> = { year: 12, quarter: 3, month: 1 };

const daysIn = (year: number, month: number) => new Date(utcDay(year, month + 1, 1) - dayMs).getUTCDate();

/** `amount` units added to an instant, in a zone (addUnits of MongoDB's date arithmetic). */
export function addUnits(ms: number, unit: Unit, amount: number, zone: Zone): number {
  if (unit === "millisecond" || unit === "second" || unit === "minute" || unit === "hour")
    return ms + amount * unitMs[unit]!;
  const d = localDate(ms, zone);
  if (unit === "day" || unit === "week") {
    const days = unit === "week" ? amount * 7 : amount;
    return fromLocal(zone, d.year, d.month, d.day + days, d.hour, d.minute, d.second, d.millisecond);
  }
  const months = d.year * 12 + (d.month - 1) + amount * monthsOf[unit]!;
  const year = Math.floor(months / 12);
  const month = months - year * 12 + 1;
  const day = Math.min(d.day, daysIn(year, month));
  return fromLocal(zone, year, month, day, d.hour, d.minute, d.second, d.millisecond);
}

const amountLimits: Partial<Record<Unit, number>> = {
  year: 584942418,
  quarter: 2339769672,
  month: 7019309016,
  week: 30500568905,
  day: 213503982335,
  hour: 5124095576040,
  minute: 307445734562400,
  second: 18446744073744000,
};

function dateArithmetic(name: "$dateAdd" | "$dateSubtract"): AnyFn {
  return (obj, expr, options) => {
    if (!isDocument(expr)) throw errors.mongo(`${name} expects an object as its argument`);
    for (const key of keysOf(expr))
      if (!["startDate", "unit", "amount", "timezone"].includes(key))
        throw errors.mongo(
          `Unrecognized argument to ${name}: ${key}. Expected arguments are startDate, unit, amount, and optionally timezone.`,
        );
    if (!("startDate" in expr && "unit" in expr && "amount" in expr))
      throw errors.mongo(`${name} requires startDate, unit, and amount to be present`);
    const start = evaluate(obj, expr.startDate, options);
    const unit = evaluate(obj, expr.unit, options);
    const amount = evaluate(obj, expr.amount, options);
    if (nullish(start) || nullish(unit) || nullish(amount)) return null;
    const timezone = expr.timezone === undefined ? undefined : evaluate(obj, expr.timezone, options);
    if (expr.timezone !== undefined && nullish(timezone)) return null;
    const zone = zoneOf(timezone);
    if (!(start instanceof Date) && typeOf(start) !== "Timestamp" && typeOf(start) !== "ObjectId")
      throw errors.mongo(`${name} requires startDate to be convertible to a date`);
    if (typeof unit !== "string") throw errors.mongo(`${name} expects string defining the time unit`);
    if (!(units as readonly string[]).includes(unit)) throw errors.mongo(`unknown time unit value: ${unit}`);
    let n = integral(amount);
    if (n === null) throw errors.mongo(`${name} expects integer amount of time units`);
    if (name === "$dateSubtract") n = -n;
    const limit = amountLimits[unit as Unit];
    if (limit !== undefined && Math.abs(n) >= limit)
      throw errors.mongo(`invalid dateAdd 'amount' parameter value: ${n} ${unit}`);
    const result = addUnits(dateMs(start), unit as Unit, n, zone);
    return instant(result, "dateAdd overflowed");
  };
}

const weekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

/** `startOfWeek` as a day number (0 Sunday – 6 Saturday). */
function startOfWeekOf(name: string, value: unknown): number {
  if (typeof value !== "string")
    throw errors.mongo(`${name} requires 'startOfWeek' to be a string, but got ${bsonTypeAlias(value)}`);
  const lower = value.toLowerCase();
  const day = weekdays.findIndex((d) => d === lower || d.slice(0, 3) === lower);
  if (day === -1)
    throw errors.mongo(`${name} parameter 'startOfWeek' value cannot be recognized as a day of a week: ${value}`);
  return day;
}

function unitOf(name: string, value: unknown): Unit {
  if (typeof value !== "string")
    throw errors.mongo(`${name} requires 'unit' to be a string, but got ${bsonTypeAlias(value)}`);
  if (!(units as readonly string[]).includes(value))
    throw errors.mongo(`${name} parameter 'unit' value cannot be recognized as a time unit: ${value}`);
  return value as Unit;
}

function zoneFor(name: string, timezone: unknown): Zone {
  try {
    return zoneOf(timezone);
  } catch (error) {
    throw errors.mongo(`${name} parameter 'timezone' value parsing failed :: caused by :: ${(error as Error).message}`);
  }
}

/** Calendar days between two local dates. */
const dayNumber = (d: LocalDate) => Math.round(utcDay(d.year, d.month, d.day) / dayMs);

/** Unit boundaries crossed from one instant to another in a zone (dateDiff). */
function unitsBetween(startMs: number, endMs: number, unit: Unit, zone: Zone, weekStart: number): number {
  if (unit === "millisecond") return endMs - startMs;
  const a = localDate(startMs, zone);
  const b = localDate(endMs, zone);
  const years = b.year - a.year;
  switch (unit) {
    case "year":
      return years;
    case "quarter":
      return Math.floor((b.month - 1) / 3) - Math.floor((a.month - 1) / 3) + 4 * years;
    case "month":
      return b.month - a.month + 12 * years;
    case "day":
      return dayNumber(b) - dayNumber(a);
    case "week": {
      const days = dayNumber(b) - dayNumber(a);
      const dow = (d: LocalDate) => (d.dayOfWeek - 1 - weekStart + 7) % 7;
      return Math.trunc((days + dow(a) - dow(b)) / 7);
    }
  }
  const days = dayNumber(b) - dayNumber(a);
  const offsetSeconds = (a.offset - b.offset) * 60;
  const hours = b.hour - a.hour + 24 * days;
  if (unit === "hour") return hours + Math.trunc(offsetSeconds / 3600);
  const minutes = b.minute - a.minute + 60 * hours;
  if (unit === "minute") return minutes + Math.trunc(offsetSeconds / 60);
  return b.second - a.second + 60 * minutes + offsetSeconds;
}

const dateDiff: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr)) throw errors.mongo("$dateDiff only supports an object as its argument");
  for (const key of keysOf(expr))
    if (!["startDate", "endDate", "unit", "timezone", "startOfWeek"].includes(key))
      throw errors.mongo(`Unrecognized argument to $dateDiff: ${key}`);
  for (const field of ["startDate", "endDate", "unit"])
    if (!(field in expr)) throw errors.mongo(`Missing '${field}' parameter to $dateDiff`);
  const start = evaluate(obj, expr.startDate, options);
  const end = evaluate(obj, expr.endDate, options);
  const unit = evaluate(obj, expr.unit, options);
  const startOfWeek = expr.startOfWeek === undefined ? "sunday" : evaluate(obj, expr.startOfWeek, options);
  if (nullish(start) || nullish(end) || nullish(unit) || (unit === "week" && nullish(startOfWeek))) return null;
  const timezone = expr.timezone === undefined ? undefined : evaluate(obj, expr.timezone, options);
  if (expr.timezone !== undefined && nullish(timezone)) return null;
  const zone = zoneFor("$dateDiff", timezone);
  for (const [field, value] of [
    ["startDate", start],
    ["endDate", end],
  ] as const)
    if (!(value instanceof Date) && typeOf(value) !== "Timestamp" && typeOf(value) !== "ObjectId")
      throw errors.mongo(`$dateDiff requires '${field}' to be a date, but got ${bsonTypeAlias(value)}`);
  const u = unitOf("$dateDiff", unit);
  const weekStart = u === "week" ? startOfWeekOf("$dateDiff", startOfWeek) : 0;
  return Long.fromNumber(unitsBetween(dateMs(start), dateMs(end), u, zone, weekStart));
};

const dateTrunc: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr)) throw errors.mongo("$dateTrunc only supports an object as its argument");
  for (const key of keysOf(expr))
    if (!["date", "unit", "binSize", "timezone", "startOfWeek"].includes(key))
      throw errors.mongo(
        `Unrecognized argument to $dateTrunc: ${key}. Expected arguments are date, unit, and optionally, binSize, timezone, startOfWeek`,
      );
  if (!("date" in expr)) throw errors.mongo("Missing 'date' parameter to $dateTrunc");
  if (!("unit" in expr)) throw errors.mongo("Missing 'unit' parameter to $dateTrunc");
  const date = evaluate(obj, expr.date, options);
  const unit = evaluate(obj, expr.unit, options);
  const binSize = expr.binSize === undefined ? 1 : evaluate(obj, expr.binSize, options);
  const startOfWeek = expr.startOfWeek === undefined ? "sunday" : evaluate(obj, expr.startOfWeek, options);
  if (nullish(date) || nullish(unit) || nullish(binSize) || (unit === "week" && nullish(startOfWeek))) return null;
  const timezone = expr.timezone === undefined ? undefined : evaluate(obj, expr.timezone, options);
  if (expr.timezone !== undefined && nullish(timezone)) return null;
  const zone = zoneFor("$dateTrunc", timezone);
  if (!(date instanceof Date) && typeOf(date) !== "Timestamp" && typeOf(date) !== "ObjectId")
    throw errors.mongo(`$dateTrunc requires 'date' to be a date, but got ${bsonTypeAlias(date)}`);
  const u = unitOf("$dateTrunc", unit);
  const size = integral(binSize);
  if (size === null)
    throw errors.mongo(
      `$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '${shellText(binSize)}' of type ${bsonTypeAlias(binSize)}`,
    );
  if (size <= 0) throw errors.mongo(`$dateTrunc requires 'binSize' to be greater than 0, but got value ${size}`);
  const ms = dateMs(date);
  // Bins count from 2000-01-01 00:00 in the zone (for weeks, the first week start on or after it).
  let reference = 946_684_800_000 - localDate(946_684_800_000, zone).offset * minuteMs;
  const weekStart = u === "week" ? startOfWeekOf("$dateTrunc", startOfWeek) : 0;
  if (u === "week") reference = addUnits(reference, "day", (weekStart - 6 + 7) % 7, zone);
  if (unitMs[u] !== undefined && u !== "day" && u !== "week") {
    const width = size * unitMs[u]!;
    // MongoDB computes the bin's width in 64-bit milliseconds.
    if (width > 2 ** 63) throw errors.mongo("dateTrunc overflowed");
    return instant(reference + Math.floor((ms - reference) / width) * width, "dateTrunc overflowed");
  }
  if (size > 100_000_000_000) throw errors.mongo("dateTrunc unsupported binSize value");
  const n = unitsBetween(reference, ms, u, zone, weekStart);
  const lower = n - (((n % size) + size) % size);
  return instant(addUnits(reference, u, lower, zone), "dateTrunc overflowed");
};

// ---------------------------------------------------------------------------------------------
// $dateFromString

const zoneAbbreviations: Record<string, number> = {
  UTC: 0,
  UT: 0,
  GMT: 0,
  Z: 0,
  EST: -300,
  EDT: -240,
  CST: -360,
  CDT: -300,
  MST: -420,
  MDT: -360,
  PST: -480,
  PDT: -420,
  CET: 60,
  CEST: 120,
  BST: 60,
  IST: 330,
};

interface Parsed {
  year?: number;
  month?: number;
  day?: number;
  hour?: number;
  minute?: number;
  second?: number;
  millisecond?: number;
  isoYear?: number;
  isoWeek?: number;
  isoDay?: number;
  dayOfYear?: number;
  /** Minutes east of UTC the string names, and how: an offset, or a zone's name. */
  offset?: number;
  zoneKind?: "offset" | "name";
}

class ParseFailure extends Error {}

const monthIndex = (name: string): number | undefined => {
  const lower = name.toLowerCase();
  const i = monthNames.findIndex((m) => m.toLowerCase() === lower || m.slice(0, 3).toLowerCase() === lower);
  return i === -1 ? undefined : i + 1;
};

const twoDigitYear = (y: string) =>
  y.length === 2 ? (Number(y) < 70 ? 2000 + Number(y) : 1900 + Number(y)) : Number(y);

/** A time and zone after a date: `[T| ]HH:MM[:SS[.fff]]`, then `Z`, an offset or a zone's name. */
function parseTimeAndZone(text: string, out: Parsed): void {
  const m =
    /^(?:[T ]\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?|(?:GMT|UTC)(?:[+-]\d{1,2}(?::?\d{2})?)?|[A-Z]{2,4})?$/i.exec(
      text,
    );
  if (!m) throw new ParseFailure();
  if (m[1] !== undefined) {
    out.hour = Number(m[1]);
    out.minute = Number(m[2]);
    out.second = Number(m[3] ?? 0);
    out.millisecond = m[4] === undefined ? 0 : Number(m[4].slice(0, 3).padEnd(3, "0"));
  }
  const zone = m[5];
  if (zone === undefined) return;
  const offset = /^(?:GMT|UTC)?([+-])(\d{1,2})(?::?(\d{2}))?$/i.exec(zone);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? 0);
    out.offset = offset[1] === "-" ? -minutes : minutes;
    out.zoneKind = "offset";
    return;
  }
  const named = zoneAbbreviations[zone.toUpperCase()];
  if (named === undefined) throw new ParseFailure();
  out.offset = named;
  out.zoneKind = "name";
}

/** Reads the rest of a written date after its day, month and year: a time, then a zone. */
const restOf = (time: string | undefined, zone: string | undefined): string =>
  `${time ? ` ${time}` : ""}${zone ? ` ${zone}` : ""}`.replace(/^ (?=[A-Za-z+-])/, "");

/** The forms a date string is read in without a format, each filling the fields it names. */
const freeForms: [RegExp, (m: RegExpExecArray, out: Parsed) => void][] = [
  // 2024-03-10, 2024/03/10, then a time and zone
  [
    /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})(.*)$/,
    (m, out) => {
      Object.assign(out, { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) });
      parseTimeAndZone(m[4]!, out);
    },
  ],
  // 20240310, 20240310T102030Z
  [
    /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2}))?(Z)?$/,
    (m, out) => {
      Object.assign(out, { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]) });
      if (m[4] !== undefined) Object.assign(out, { hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6]) });
      if (m[7]) Object.assign(out, { offset: 0, zoneKind: "name" });
    },
  ],
  // 2024-W10-2
  [
    /^(\d{4})-W(\d{2})-?(\d)(.*)$/,
    (m, out) => {
      Object.assign(out, { isoYear: Number(m[1]), isoWeek: Number(m[2]), isoDay: Number(m[3]) });
      parseTimeAndZone(m[4]!, out);
    },
  ],
  // 03/10/2024 (month first), 7/4/17
  [
    /^(\d{1,2})\/(\d{1,2})\/(\d{4}|\d{2})(.*)$/,
    (m, out) => {
      Object.assign(out, { month: Number(m[1]), day: Number(m[2]), year: twoDigitYear(m[3]!) });
      parseTimeAndZone(m[4]!, out);
    },
  ],
  // 10.03.2024, 04-07-2017 (day first)
  [
    /^(\d{1,2})[.-](\d{1,2})[.-](\d{4})(.*)$/,
    (m, out) => {
      Object.assign(out, { day: Number(m[1]), month: Number(m[2]), year: Number(m[3]) });
      parseTimeAndZone(m[4]!, out);
    },
  ],
  // Sun, 10 Mar 2024 10:20:30 GMT
  [
    /^(?:[A-Za-z]{3},?\s+)?(\d{1,2})\s+([A-Za-z]+)\.?\s+(\d{4})(?:\s+(\d{1,2}:\d{2}(?::\d{2})?))?\s*(.*)$/,
    (m, out) => {
      Object.assign(out, { day: Number(m[1]), month: monthIndex(m[2]!), year: Number(m[3]) });
      parseTimeAndZone(restOf(m[4], m[5]), out);
    },
  ],
  // Mar 10 2024, July 4th, 2017
  [
    /^([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})(?:\s+(\d{1,2}:\d{2}(?::\d{2})?))?\s*(.*)$/,
    (m, out) => {
      Object.assign(out, { month: monthIndex(m[1]!), day: Number(m[2]), year: Number(m[3]) });
      parseTimeAndZone(restOf(m[4], m[5]), out);
    },
  ],
];

/** A date string as MongoDB reads one without a format: ISO 8601 and the common written forms. */
function parseFreeForm(text: string): Parsed {
  const s = text.trim();
  const out: Parsed = {};
  const form = freeForms.find(([pattern]) => pattern.test(s));
  if (form) form[1](form[0].exec(s)!, out);
  else if (/^\d{1,2}:\d{2}/.test(s)) throw new IncompleteDate();
  else throw new ParseFailure();
  if (out.month === undefined && out.isoYear === undefined) throw new ParseFailure();
  return out;
}

class IncompleteDate extends Error {}

/** A date string read with a format of `$dateFromString`'s specifiers. */
function parseWithFormat(text: string, format: string): Parsed {
  const out: Parsed = {};
  let at = 0;
  const fail = (message: string): never => {
    throw new FormatFailure(`${at}: ${message} '${text[at] ?? "\u0000"}'`);
  };
  const digits = (min: number, max: number): number => {
    const m = new RegExp(`^\\d{${min},${max}}`).exec(text.slice(at));
    if (!m) fail(at >= text.length ? "Not enough data available to satisfy format" : "Unexpected data found.");
    at += m![0].length;
    return Number(m![0]);
  };
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== "%") {
      if (text[at] !== c)
        fail(at >= text.length ? "Not enough data available to satisfy format" : "Format literal not found");
      at++;
      continue;
    }
    const spec = format[++i]!;
    switch (spec) {
      case "Y":
        out.year = digits(4, 4);
        break;
      case "G":
        out.isoYear = digits(4, 4);
        break;
      case "m":
        out.month = digits(1, 2);
        break;
      case "d":
        out.day = digits(1, 2);
        break;
      case "H":
        out.hour = digits(1, 2);
        break;
      case "M":
        out.minute = digits(1, 2);
        break;
      case "S":
        out.second = digits(1, 2);
        break;
      case "L": {
        const start = at;
        digits(1, 3);
        out.millisecond = Number(text.slice(start, at).padEnd(3, "0"));
        break;
      }
      case "j":
        out.dayOfYear = digits(1, 3);
        break;
      case "V":
        out.isoWeek = digits(1, 2);
        break;
      case "u":
        out.isoDay = digits(1, 1);
        break;
      case "b":
      case "B": {
        const m = /^[A-Za-z]+/.exec(text.slice(at));
        const month = m ? monthIndex(m[0]) : undefined;
        if (month === undefined) fail("A textual month could not be found");
        out.month = month;
        at += m![0].length;
        break;
      }
      case "z": {
        const m = /^(Z|[+-]\d{2}(?::?\d{2})?|[A-Z]{3,4})/.exec(text.slice(at));
        if (!m) fail("The timezone could not be found in the database");
        const zone = m![1]!;
        const offset = /^([+-])(\d{2})(?::?(\d{2}))?$/.exec(zone);
        if (offset) {
          const minutes = Number(offset[2]) * 60 + Number(offset[3] ?? 0);
          Object.assign(out, { offset: offset[1] === "-" ? -minutes : minutes, zoneKind: "offset" });
        } else {
          const named = zoneAbbreviations[zone.toUpperCase()];
          if (named === undefined) fail("The timezone could not be found in the database");
          Object.assign(out, { offset: named, zoneKind: "name" });
        }
        at += zone.length;
        break;
      }
      case "Z": {
        const m = /^[+-]\d+/.exec(text.slice(at));
        if (!m) fail("Unexpected data found.");
        Object.assign(out, { offset: Number(m![0]), zoneKind: "offset" });
        at += m![0].length;
        break;
      }
      default:
        if (text[at] !== "%") fail("Format literal not found");
        at++;
    }
  }
  if (at < text.length) fail("Trailing data");
  const natural = out.year !== undefined || out.month !== undefined || out.day !== undefined;
  const iso = out.isoYear !== undefined || out.isoWeek !== undefined || out.isoDay !== undefined;
  if (natural && iso) fail("Mixing of ISO dates with natural dates is not allowed");
  if (!iso) {
    out.year ??= 1970;
    if (out.dayOfYear !== undefined) {
      const start = new Date(utcDay(out.year, 1, out.dayOfYear));
      out.month = start.getUTCMonth() + 1;
      out.day = start.getUTCDate();
    }
    out.month ??= 1;
    out.day ??= 1;
  } else {
    out.isoYear ??= 1970;
    out.isoWeek ??= 1;
    out.isoDay ??= 1;
  }
  return out;
}

class FormatFailure extends Error {}

/** The instant of parsed fields, checked to be a real date and time. */
function instantOf(parsed: Parsed, zone: Zone): number {
  let { year, month, day } = parsed;
  if (parsed.isoYear !== undefined) {
    const d = new Date(isoYearStart(parsed.isoYear) + ((parsed.isoWeek! - 1) * 7 + (parsed.isoDay! - 1)) * dayMs);
    year = d.getUTCFullYear();
    month = d.getUTCMonth() + 1;
    day = d.getUTCDate();
  }
  const { hour = 0, minute = 0, second = 0, millisecond = 0 } = parsed;
  if (month! < 1 || month! > 12 || day! < 1 || day! > daysIn(year!, month!)) throw new InvalidDate("date");
  if (hour > 23 || minute > 59 || second > 59) throw new InvalidDate("time");
  if (parsed.offset !== undefined)
    return fromLocal({ offset: parsed.offset }, year!, month!, day!, hour, minute, second, millisecond);
  return fromLocal(zone, year!, month!, day!, hour, minute, second, millisecond);
}

class InvalidDate extends Error {
  constructor(readonly what: "date" | "time") {
    super(what);
  }
}

const dateFromString: AnyFn = (obj, expr, options) => {
  if (!isDocument(expr))
    throw errors.mongo(`$dateFromString only supports an object as an argument, found: ${bsonTypeAlias(expr)}`);
  for (const key of keysOf(expr))
    if (!["dateString", "format", "timezone", "onNull", "onError"].includes(key))
      throw errors.mongo(`Unrecognized argument to $dateFromString: ${key}`);
  if (!("dateString" in expr)) throw errors.mongo("Missing 'dateString' parameter to $dateFromString");
  const format = expr.format === undefined ? undefined : evaluate(obj, expr.format, options);
  if (!nullish(format)) {
    if (typeof format !== "string")
      throw errors.mongo(
        `$dateFromString requires that 'format' be a string, found: ${bsonTypeAlias(format)} with value ${shellText(format)}`,
      );
    checkFormat(format, fromStringSpecifiers);
  }
  const timezone = expr.timezone === undefined ? undefined : evaluate(obj, expr.timezone, options);
  const zone = nullish(timezone) ? utc : zoneOf(timezone);
  const text = evaluate(obj, expr.dateString, options);
  if (nullish(text)) return expr.onNull === undefined ? null : evaluate(obj, expr.onNull, options);
  const failed = (message: string) => {
    if (expr.onError !== undefined) return evaluate(obj, expr.onError, options);
    throw errors.mongo(message);
  };
  if (typeof text !== "string")
    return failed(
      `$dateFromString requires that 'dateString' be a string, found: ${bsonTypeAlias(text)} with value ${shellText(text)}`,
    );
  if (expr.timezone !== undefined && nullish(timezone)) return null;
  if (expr.format !== undefined && nullish(format)) return null;
  let parsed: Parsed;
  try {
    parsed = typeof format === "string" ? parseWithFormat(text, format) : parseFreeForm(text);
  } catch (error) {
    return failed(parseFailureText(text, error));
  }
  if (parsed.zoneKind !== undefined && !isUtc(timezone ?? undefined)) {
    return failed(
      parsed.zoneKind === "offset"
        ? "you cannot pass in a date/time string with GMT offset together with a timezone argument"
        : "you cannot pass in a date/time string with time zone information ('Z') together with a timezone argument",
    );
  }
  try {
    return new Date(instantOf(parsed, zone));
  } catch (error) {
    if (error instanceof InvalidDate) return failed(invalidDateText(text, error));
    throw error;
  }
};

/** MongoDB's refusal of a date string it could not read. */
function parseFailureText(text: string, error: unknown): string {
  if (error instanceof IncompleteDate)
    return `an incomplete date/time string has been found, with elements missing: "${text}"`;
  if (error instanceof FormatFailure) return `Error parsing date string '${text}'; ${error.message}`;
  return text.trim() === ""
    ? `Error parsing date string '${text}'; 0: Empty string '\u0000'`
    : `Error parsing date string '${text}'; 0: Unexpected character '${text[0]}'`;
}

const invalidDateText = (text: string, error: InvalidDate) =>
  `Error parsing date string '${text}'; ${text.length}: The parsed ${error.what} was invalid '\u0000'`;

/**
 * A date string read as MongoDB reads one without a format (`$convert` to a date, `$toDate`):
 * its instant in milliseconds, or the text of MongoDB's refusal.
 */
export function dateOfString(text: string): number | string {
  let parsed: Parsed;
  try {
    parsed = parseFreeForm(text);
  } catch (error) {
    return parseFailureText(text, error);
  }
  try {
    return instantOf(parsed, utc);
  } catch (error) {
    if (error instanceof InvalidDate) return invalidDateText(text, error);
    throw error;
  }
}

export const dateExpressionOperators: Record<string, AnyFn> = {
  ...datePartOperators,
  $dateToString: dateToString,
  $dateToParts: dateToParts,
  $dateFromParts: dateFromParts,
  $dateFromString: dateFromString,
  $dateAdd: dateArithmetic("$dateAdd"),
  $dateSubtract: dateArithmetic("$dateSubtract"),
  $dateDiff: dateDiff,
  $dateTrunc: dateTrunc,
};
