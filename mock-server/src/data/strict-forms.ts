/**
 * Extended JSON that the service's reader (the Go driver's) refuses and the bson library reads a
 * way of its own, changing the data without a word: a `$binary`'s base64 with characters that are
 * not base64 (dropped: `"!!"` was stored as no bytes, base64url's `-` and `_` lost) or without its
 * padding, a `$date` string that is not an RFC 3339 date-time as Go's `time.Parse` reads its
 * layout (`T` and `Z` upper case) or names no day (`"2024-02-30T…"` was stored as March 1st,
 * `"2024-01-01"` as a date), numbers' text that `strconv` does not read (`"1.5"` as an Int32 was
 * 1, `"3000000000"` wrapped around, `"1.5abc"` as a double 1.5), a number past a double (`1e400`,
 * bare or a `$numberDouble`'s: Infinity here), a type's object with more or fewer keys or parts
 * than its own (the library kept the type and dropped or made up the rest), `$minKey`/`$maxKey`
 * other than 1, `$undefined` other than true. Refused in the Go reader's words (`invalid $binary
 * base64 string: …`).
 */

import { Turns, takeTurn } from "./turns.ts";

/**
 * A text that may hold one of these forms (else the check is skipped: one regular-expression test).
 * Canonical Extended JSON as the SDKs write it (`{"$oid": "…"}`, `{"$numberInt": "5"}`, `{"$date":
 * {"$numberLong": "…"}}`) has none of these marks.
 */
export const strictFormMarkers = new RegExp(
  [
    // The rarer types' keys.
    String.raw`"\$(?:binary|minKey|maxKey|undefined|timestamp|regularExpression|dbPointer)"`,
    // A `$date` string, or a `$date` object other than `{"$numberLong": "…"}`.
    String.raw`"\$date"\s*:\s*(?:"|\{(?!\s*"\$numberLong"\s*:\s*"[^"\\]*"\s*\}))`,
    // Numbers' text other than the plain ones (digits that fit: 9 an Int32's, 18 an Int64's), or no text.
    String.raw`"\$numberInt"\s*:(?!\s*"[+-]?\d{1,9}")`,
    String.raw`"\$numberLong"\s*:(?!\s*"[+-]?\d{1,18}")`,
    String.raw`"\$numberDouble"\s*:(?!\s*"(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d{1,2})?|NaN|-?Infinity)")`,
    String.raw`"\$(?:numberDecimal|oid|symbol)"\s*:\s*[^"\s]`,
    // A type's value followed by a comma: another key may follow it in its object.
    String.raw`"\$(?:numberInt|numberLong|numberDouble|numberDecimal|oid|symbol|date|timestamp|regularExpression|dbPointer|code)"\s*:\s*(?:"[^"\\]*"|\{[^{}]*\})\s*,`,
    // A number with an exponent of three digits or of 309 digits (one past a double, which
    // JSON.parse reads as Infinity and Go refuses): a number's, not a hex string's (`…61e234…`).
    // (A run of digits tried from its start only: from each of its digits, a text of numbers took
    // three times as long.)
    String.raw`(?:^|[^\w.])-?\d+(?:\.\d+)?[eE]\+?\d{3}|(?<!\d)\d{309}`,
  ].join("|"),
);

/** How much of a text one test for marks reads, and how far back into the part before it reaches. */
const markedSliceChars = 256 * 1024;
const markedOverlapChars = 16 * 1024;

/**
 * Whether a text holds a mark, tested a part at a time with turns for other work between (a body
 * of 17 MB of numbers held the main thread ~270 ms in one test). A mark across two parts is found
 * unless it spans more than the overlap — a string or a run of spaces that long inside it — and
 * then the forms it would have marked are refused by the library or the number checks anyway, or
 * change nothing but that very value.
 */
export async function holdsMarks(text: string): Promise<boolean> {
  if (text.length <= markedSliceChars) return strictFormMarkers.test(text);
  const turns = new Turns();
  for (let from = 0; from < text.length; from += markedSliceChars) {
    const part = text.slice(Math.max(0, from - markedOverlapChars), from + markedSliceChars);
    if (strictFormMarkers.test(part)) return true;
    await turns.maybe();
  }
  return false;
}

/**
 * Walks a value JSON.parse made for the first such form: returns what is wrong with it, or null,
 * and yields every 4,096 containers (a caller on the main thread gives other work a turn there).
 * Self-contained (it names nothing outside itself): its source is also the function process's,
 * which reads a call's arguments (functions/sandbox-bootstrap.ts).
 */
export function* strictFormWalk(root: unknown): Generator<undefined, string | null> {
  const base64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
  const dateTime = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$/;
  const days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  // The Go reader takes an object's first key for its type (named as bsontype names them) and reads
  // that type's object as its parser does (extjson_parser.go), in this order: the value's own
  // shape, then the object's end after it — where the library kept the type, dropped the other
  // keys and made up missing parts (a `$binary` without `subType` was 0, a `$regularExpression`
  // without `options` none) — then the parts' names and the value's text.
  const names: Record<string, string> = {
    $numberInt: "32-bit integer",
    $numberLong: "64-bit integer",
    $numberDouble: "double",
    $numberDecimal: "128-bit decimal",
    $oid: "objectID",
    $symbol: "symbol",
    $minKey: "min key",
    $maxKey: "max key",
    $undefined: "undefined",
  };
  const pairs: Record<string, [string, string, string]> = {
    $binary: ["binary", "base64", "subType"],
    $regularExpression: ["regex", "pattern", "options"],
    $timestamp: ["timestamp", "t", "i"],
    $dbPointer: ["dbPointer", "$ref", "$id"],
  };
  const isRecord = (value: unknown): value is Record<string, unknown> =>
    value !== null && typeof value === "object" && !Array.isArray(value);
  const int32 = (value: unknown) =>
    typeof value === "number" && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647;
  const formProblem = (record: Record<string, unknown>, keys: string[]): string | null => {
    const key = keys[0] as string;
    const value = record[key];
    if (Object.hasOwn(names, key)) {
      const fits =
        key === "$minKey" || key === "$maxKey"
          ? int32(value)
          : key === "$undefined"
            ? typeof value === "boolean"
            : typeof value === "string";
      if (!fits) return `invalid JSON input; expected value for ${names[key]}`;
      if (keys.length > 1) return `invalid JSON input; expected } after value for ${names[key]}`;
      if (key === "$minKey" || key === "$maxKey")
        return value === 1 ? null : `${key} value must be 1, but instead is ${value}`;
      // (The reader's own spelling.)
      if (key === "$undefined") return value ? null : "$undefined balue boolean should be true, but instead is false";
      return numberTextProblem(key, value as string);
    }
    if (Object.hasOwn(pairs, key)) {
      const [name, first, second] = pairs[key] as [string, string, string];
      if (!isRecord(value)) return "invalid JSON input; expected {";
      const parts = Object.keys(value);
      if (parts.length < 2) return "end of document";
      if (parts.length > 2) return "invalid JSON input; expected }";
      if (keys.length > 1) return `invalid JSON input; expected 2 key-value pairs and then } for ${name}`;
      // (In the order the parts come, as Go reads them.)
      for (const part of parts) {
        if (part !== first && part !== second) return `invalid key in ${key} object: ${part}`;
        const text = value[part];
        if (key !== "$binary" || typeof text !== "string") continue;
        if (part === "base64" && !base64.test(text.replace(/[\r\n]/g, "")))
          return `invalid $binary base64 string: ${text}`;
        if (part === "subType" && !hexInt64(text)) return `invalid $binary subType string: ${text}`;
      }
      return null;
    }
    if (key === "$date") {
      if (isRecord(value)) {
        const parts = Object.keys(value);
        if (parts.length === 0) return "end of document";
        if (parts.length > 1) return "invalid JSON input; expected }";
      }
      if (keys.length > 1) return "invalid JSON input; expected value and then } for UTC datetime";
      if (isRecord(value) && !Object.hasOwn(value, "$numberLong"))
        return `invalid key in $date object: ${Object.keys(value)[0]}`;
      return typeof value === "string" && !validDate(value) ? `invalid $date value string: ${value}` : null;
    }
    if (key === "$code" && keys.length > 1 && keys[1] !== "$scope")
      return `invalid extended JSON: unexpected key ${keys[1]} in CodeWithScope object`;
    return null;
  };
  // How the Go reader reads numbers' text: strconv.ParseInt (base 10, an int64; a `$numberInt` then
  // an int32) and ParseFloat (the library cut `"1.5"` to 1, wrapped `"3000000000"`, read `"1.5abc"`
  // as 1.5 and `""` as NaN).
  const int64Max = 9223372036854775807n;
  const hexInt64 = (text: string) => {
    const m = /^([+-]?)([\dA-Fa-f]+)$/.exec(text);
    return m !== null && BigInt(`0x${m[2]}`) <= (m[1] === "-" ? int64Max + 1n : int64Max);
  };
  const goFloat =
    /^[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?|inf(?:inity)?|0x(?:[\da-f_]+(?:\.[\da-f_]*)?|\.[\da-f_]+)p[+-]?[\d_]+)$|^nan$/i;
  const numberTextProblem = (key: string, text: string) => {
    const quoted = JSON.stringify(text);
    if (key === "$numberInt" || key === "$numberLong") {
      if (!/^[+-]?\d+$/.test(text)) return `strconv.ParseInt: parsing ${quoted}: invalid syntax`;
      const n = BigInt(text);
      if (n > int64Max || n < -int64Max - 1n) return `strconv.ParseInt: parsing ${quoted}: value out of range`;
      if (key === "$numberInt" && (n > 2147483647n || n < -2147483648n))
        return `$numberInt value should be int32 but instead is int64: ${n}`;
    } else if (key === "$numberDouble" && text !== "Infinity" && text !== "-Infinity" && text !== "NaN") {
      if (!goFloat.test(text)) return `strconv.ParseFloat: parsing ${quoted}: invalid syntax`;
      // (Past a double: Number gives Infinity where ParseFloat answers this.)
      if (!/inf/i.test(text) && !Number.isFinite(Number(text)) && !Number.isNaN(Number(text)))
        return `strconv.ParseFloat: parsing ${quoted}: value out of range`;
    }
    return null;
  };
  const validDate = (text: string) => {
    const m = dateTime.exec(text);
    if (m === null) return false;
    const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as number[];
    const leap = year! % 4 === 0 && (year! % 100 !== 0 || year! % 400 === 0);
    const inMonth = month === 2 && leap ? 29 : days[month! - 1];
    const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59);
    return (
      inMonth !== undefined && day! >= 1 && day! <= inMonth && hour! <= 23 && minute! <= 59 && second! <= 59 && offsetOk
    );
  };
  const pending: unknown[] = [root];
  let seen = 0;
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === "number" && !Number.isFinite(node))
      return "a number is past the range of a double: value out of range";
    if (node === null || typeof node !== "object") continue;
    if (++seen % 4096 === 0) yield;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) pending.push(node[i]);
      continue;
    }
    const record = node as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length > 0) {
      const problem = formProblem(record, keys);
      if (problem !== null) return problem;
    }
    for (let i = 0; i < keys.length; i++) pending.push(record[keys[i] as string]);
  }
  return null;
}

/** What is wrong with the first such form in a value JSON.parse made, or null: walked at once. */
export function strictFormProblem(root: unknown): string | null {
  const walk = strictFormWalk(root);
  for (let step = walk.next(); ; step = walk.next()) if (step.done) return step.value;
}

/**
 * What is wrong with such a form in a request's parsed body, or null: nothing to look for when its
 * JSON text (`text`) has no marker; walked giving other work turns (a body of 200,000 fields at
 * once held the main thread ~65 ms).
 */
export async function strictFormProblemIn(text: string | null, parsed: unknown): Promise<string | null> {
  if (text !== null && !(await holdsMarks(text))) return null;
  const walk = strictFormWalk(parsed);
  for (let step = walk.next(); ; step = walk.next()) {
    if (step.done) return step.value;
    await takeTurn();
  }
}
