/**
 * MongoDB's order of values: how it compares, sorts and equates BSON values, for the query
 * engine's comparisons, sorts, `$min`/`$max` and the like (query-engine.ts). mingo orders only
 * JavaScript's own types; of BSON's classes it compares the `toString()` of two of one class
 * ("10" < "9" for two Decimal128) and puts the classes after every other type by name (MaxKey
 * before ObjectId, MinKey after both). MongoDB's order, as its server implements it:
 *
 * - **Types first**, by canonical rank: MinKey < missing/undefined < null < numbers <
 *   strings/symbols < documents < arrays < binary < ObjectId < booleans < dates < timestamps <
 *   regular expressions < code < code with scope < MaxKey.
 * - **Numbers** of every kind (double, int, long, Decimal128) are one type and compare by exact
 *   value: NaN equals NaN and is below every other number; -0 equals 0.
 * - **Strings** by code point (UTF-8 byte order), not by UTF-16 unit.
 * - **Documents** field by field, in their order: the value's type, then the field's name, then
 *   the value; a document that runs out first is the smaller. **Arrays** element by element, the
 *   same way (an array is a document keyed "0", "1", …).
 * - **Binary** by length, then subtype, then bytes; **ObjectId** by bytes; **dates** by signed
 *   milliseconds; **timestamps** unsigned by time, then increment; **regular expressions** by
 *   pattern, then flags.
 */
import { activeCollation } from "./collation.ts";
import { keysOf } from "./wide-keys.ts";

/**
 * A value's BSON type number, or undefined when it is missing. A JavaScript number is the type
 * it is written back as (ejson-text.ts): an int within 32 bits, a long within 64, else a double.
 */
export function bsonTypeNumber(value: unknown): number | undefined {
  switch (typeof value) {
    case "undefined":
      return undefined;
    case "number":
      if (Number.isInteger(value) && !Object.is(value, -0)) {
        if (value >= -0x80000000 && value <= 0x7fffffff) return 16;
        if (value >= -(2 ** 63) && value < 2 ** 63) return 18;
      }
      return 1;
    case "bigint":
      return 18;
    case "string":
      return 2;
    case "boolean":
      return 8;
  }
  if (value === null) return 10;
  if (Array.isArray(value)) return 4;
  if (value instanceof Date) return 9;
  switch ((value as { _bsontype?: unknown })._bsontype) {
    case "Decimal128":
      return 19;
    case "Long":
      return 18;
    case "Int32":
      return 16;
    case "Double":
      return 1;
    case "BSONSymbol":
      return 14;
    case "Binary":
      return 5;
    case "ObjectId":
      return 7;
    case "Timestamp":
      return 17;
    case "BSONRegExp":
      return 11;
    case "Code":
      return (value as { scope?: unknown }).scope ? 15 : 13;
    case "MinKey":
      return -1;
    case "MaxKey":
      return 127;
  }
  if (value instanceof RegExp) return 11;
  if (value instanceof Uint8Array) return 5;
  return 3;
}

/** MongoDB's type numbers by alias (`$type`); "number" is any of the four numeric types. */
export const typeNumbers: Record<string, number> = {
  double: 1,
  string: 2,
  object: 3,
  array: 4,
  binData: 5,
  undefined: 6,
  objectId: 7,
  bool: 8,
  date: 9,
  null: 10,
  regex: 11,
  dbPointer: 12,
  javascript: 13,
  symbol: 14,
  javascriptWithScope: 15,
  int: 16,
  timestamp: 17,
  long: 18,
  decimal: 19,
  minKey: -1,
  maxKey: 127,
};
export const typeAliases = new Map(Object.entries(typeNumbers).map(([alias, n]) => [n, alias]));
export const numericTypes = [1, 16, 18, 19];

/** A value's BSON type alias, as aggregation's `$type` names it ("missing" when missing). */
export function bsonTypeAlias(value: unknown): string {
  const type = bsonTypeNumber(value);
  return type === undefined ? "missing" : typeAliases.get(type)!;
}

/** Each BSON type's rank in MongoDB's order (its server's `canonicalizeBSONType`), by type number. */
const ranks = new Map<number | undefined, number>([
  [undefined, 0],
  [6, 0],
  [10, 5],
  [1, 10],
  [16, 10],
  [18, 10],
  [19, 10],
  [2, 15],
  [14, 15],
  [3, 20],
  [4, 25],
  [5, 30],
  [7, 35],
  [8, 40],
  [9, 45],
  [17, 47],
  [11, 50],
  [13, 60],
  [15, 65],
  [-1, -1],
  [127, 127],
]);

/** The rank of `value`'s type in MongoDB's order: missing as undefined (0), below null. */
export function canonicalRank(value: unknown): number {
  return ranks.get(bsonTypeNumber(value)) ?? 20;
}

const sign = (n: number): number => (n < 0 ? -1 : n > 0 ? 1 : 0);

/** -1, 0 or 1: `a` before, equal to or after `b` in MongoDB's order. */
export function compareBson(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (typeof a === "number" && typeof b === "number") return compareDoubles(a, b);
  if (typeof a === "string" && typeof b === "string") return compareStringValues(a, b);
  const rankA = canonicalRank(a);
  const rankB = canonicalRank(b);
  if (rankA !== rankB) return rankA < rankB ? -1 : 1;
  return compareSameRank(rankA, a, b);
}

/** Whether MongoDB holds two values equal (numbers of any kind by value, documents in order). */
export function equalBson(a: unknown, b: unknown): boolean {
  return compareBson(a, b) === 0;
}

function compareSameRank(rank: number, a: unknown, b: unknown): number {
  switch (rank) {
    case 10:
      return compareNumbers(a, b);
    case 15:
      return compareStringValues(textOf(a), textOf(b));
    case 20:
      return compareDocuments(asDocument(a), asDocument(b));
    case 25:
      return compareDocuments(a as object, b as object);
    case 30:
      return compareBinary(bytesOf(a), subtypeOf(a), bytesOf(b), subtypeOf(b));
    case 35:
      return compareBytes(objectIdBytes(a), objectIdBytes(b));
    case 40:
      return a === b ? 0 : a ? 1 : -1;
    case 45:
      return sign((a as Date).getTime() - (b as Date).getTime());
    case 47:
      return (a as { compare(other: unknown): number }).compare(b);
    case 50: {
      const [patternA, flagsA] = regexParts(a);
      const [patternB, flagsB] = regexParts(b);
      return compareStrings(patternA, patternB) || compareStrings(flagsA, flagsB);
    }
    case 60:
    case 65: {
      const codeA = a as { code: string | (() => void); scope?: object | null };
      const codeB = b as { code: string | (() => void); scope?: object | null };
      return (
        compareStrings(String(codeA.code), String(codeB.code)) ||
        (rank === 65 ? compareDocuments(codeA.scope ?? {}, codeB.scope ?? {}) : 0)
      );
    }
    default:
      // MinKey, MaxKey, missing and null: one value each.
      return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Numbers

function compareDoubles(a: number, b: number): number {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === b) return 0;
  // NaN equals NaN and is below every other number.
  return Number.isNaN(a) ? (Number.isNaN(b) ? 0 : -1) : 1;
}

/** A number's exact value: sign × coefficient × 10^exponent, or NaN, or an infinity. */
type Exact = { nan: true } | { infinite: -1 | 1 } | { negative: boolean; coefficient: bigint; exponent: number };

function compareNumbers(a: unknown, b: unknown): number {
  const x = exactNumber(a);
  const y = exactNumber(b);
  if ("nan" in x) return "nan" in y ? 0 : -1;
  if ("nan" in y) return 1;
  if ("infinite" in x) return "infinite" in y ? sign(x.infinite - y.infinite) : x.infinite;
  if ("infinite" in y) return -y.infinite;
  const signX = x.coefficient === 0n ? 0 : x.negative ? -1 : 1;
  const signY = y.coefficient === 0n ? 0 : y.negative ? -1 : 1;
  if (signX !== signY || signX === 0) return sign(signX - signY);
  return signX * compareMagnitudes(x.coefficient, x.exponent, y.coefficient, y.exponent);
}

function compareMagnitudes(c1: bigint, e1: number, c2: bigint, e2: number): number {
  // The place of the leading digit decides when it differs; else the coefficients, aligned.
  const lead1 = c1.toString().length + e1;
  const lead2 = c2.toString().length + e2;
  if (lead1 !== lead2) return lead1 < lead2 ? -1 : 1;
  const aligned1 = e1 > e2 ? c1 * 10n ** BigInt(e1 - e2) : c1;
  const aligned2 = e2 > e1 ? c2 * 10n ** BigInt(e2 - e1) : c2;
  return aligned1 < aligned2 ? -1 : aligned1 > aligned2 ? 1 : 0;
}

const decimalText = /^(-)?(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/;
const doubleView = new DataView(new ArrayBuffer(8));

function exactNumber(value: unknown): Exact {
  if (typeof value === "bigint") return { negative: value < 0n, coefficient: value < 0n ? -value : value, exponent: 0 };
  if (typeof value === "number") return exactDouble(value);
  const type = (value as { _bsontype?: unknown })._bsontype;
  if (type === "Int32" || type === "Double") return exactDouble((value as { valueOf(): number }).valueOf());
  if (type === "Long") {
    const whole = BigInt(String(value));
    return { negative: whole < 0n, coefficient: whole < 0n ? -whole : whole, exponent: 0 };
  }
  const text = String(value);
  if (text === "NaN" || text === "-NaN") return { nan: true };
  if (text === "Infinity") return { infinite: 1 };
  if (text === "-Infinity") return { infinite: -1 };
  const parts = decimalText.exec(text);
  if (!parts) return { nan: true };
  const fraction = parts[3] ?? "";
  return {
    negative: parts[1] === "-",
    coefficient: BigInt(parts[2]! + fraction),
    exponent: Number(parts[4] ?? 0) - fraction.length,
  };
}

function exactDouble(value: number): Exact {
  if (Number.isNaN(value)) return { nan: true };
  if (!Number.isFinite(value)) return { infinite: value < 0 ? -1 : 1 };
  const negative = value < 0;
  const magnitude = Math.abs(value);
  if (Number.isSafeInteger(magnitude)) return { negative, coefficient: BigInt(magnitude), exponent: 0 };
  // mantissa × 2^power exactly; 2^-k = 5^k × 10^-k.
  doubleView.setFloat64(0, magnitude);
  const high = doubleView.getUint32(0);
  const low = doubleView.getUint32(4);
  const biased = high >>> 20;
  let mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(low);
  let power: number;
  if (biased === 0) power = -1074;
  else {
    mantissa |= 1n << 52n;
    power = biased - 1075;
  }
  if (power >= 0) return { negative, coefficient: mantissa << BigInt(power), exponent: 0 };
  return { negative, coefficient: mantissa * 5n ** BigInt(-power), exponent: power };
}

// ---------------------------------------------------------------------------------------------
// Strings, documents, bytes

export const surrogate = /[\uD800-\uDFFF]/;

/** Code-point order: UTF-16 units order the same unless a surrogate meets U+E000–U+FFFF. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  if (!surrogate.test(a) && !surrogate.test(b)) return a < b ? -1 : 1;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointKey(x) < codePointKey(y) ? -1 : 1;
  }
  return a.length < b.length ? -1 : 1;
}

/**
 * Two string values (strings and symbols) in the order of the evaluation's collation
 * (collation.ts), else by code point. Field names, patterns and code are never collated.
 */
export function compareStringValues(a: string, b: string): number {
  const collation = activeCollation();
  if (collation === null) return compareStrings(a, b);
  const order = collation.compare(a, b);
  return order !== 0 || !collation.identical ? order : compareStrings(a, b);
}

/** Surrogates (the units of code points above U+FFFF) placed after U+E000–U+FFFF. */
const codePointKey = (unit: number): number => (unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit);

function textOf(value: unknown): string {
  return typeof value === "string" ? value : String((value as { value?: unknown }).value ?? value);
}

function asDocument(value: unknown): object {
  const json = (value as { _bsontype?: unknown; toJSON?: () => unknown })._bsontype === "DBRef";
  return json ? ((value as { toJSON(): object }).toJSON() as object) : (value as object);
}

function compareDocuments(a: object, b: object): number {
  const keysA = keysOf(a);
  const keysB = keysOf(b);
  const length = Math.min(keysA.length, keysB.length);
  for (let i = 0; i < length; i++) {
    const valueA = (a as Record<string, unknown>)[keysA[i]!];
    const valueB = (b as Record<string, unknown>)[keysB[i]!];
    const rankA = canonicalRank(valueA);
    const rankB = canonicalRank(valueB);
    if (rankA !== rankB) return rankA < rankB ? -1 : 1;
    const name = compareStrings(keysA[i]!, keysB[i]!);
    if (name !== 0) return name;
    const order = compareSameRank(rankA, valueA, valueB);
    if (order !== 0) return order;
  }
  return sign(keysA.length - keysB.length);
}

function bytesOf(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const binary = value as { buffer: Uint8Array; position: number };
  return binary.buffer.subarray(0, binary.position);
}

const subtypeOf = (value: unknown): number =>
  value instanceof Uint8Array ? 0 : ((value as { sub_type?: number }).sub_type ?? 0);

function compareBinary(a: Uint8Array, subA: number, b: Uint8Array, subB: number): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  if (subA !== subB) return subA < subB ? -1 : 1;
  return compareBytes(a, b);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return sign(a.length - b.length);
}

const objectIdBytes = (value: unknown): Uint8Array => (value as { id: Uint8Array }).id;

function regexParts(value: unknown): [string, string] {
  if (value instanceof RegExp) return [value.source, value.flags];
  const regex = value as { pattern: string; options: string };
  return [regex.pattern, regex.options];
}

// ---------------------------------------------------------------------------------------------
// Equality keys

/** A number's exact value as text: trailing zeros folded into the exponent, one zero. */
function numberKey(value: unknown): string {
  const exact = exactNumber(value);
  if ("nan" in exact) return "#nan";
  if ("infinite" in exact) return exact.infinite > 0 ? "#inf" : "#-inf";
  let { coefficient, exponent } = exact;
  if (coefficient === 0n) return "#0e0";
  while (coefficient % 10n === 0n) {
    coefficient /= 10n;
    exponent += 1;
  }
  return `#${exact.negative ? "-" : ""}${coefficient}e${exponent}`;
}

/**
 * A text two values share exactly when MongoDB holds them equal (`compareBson` answers 0): a
 * group's key, a set's member. Numbers of every kind by exact value (5, 5.0 and Decimal128 "5.00"
 * share one), documents with their fields in order, missing as null.
 */
export function equalityKey(value: unknown): string {
  switch (canonicalRank(value)) {
    case 0:
    case 5:
      return "n";
    case -1:
      return "<";
    case 127:
      return ">";
    case 10:
      return numberKey(value);
    case 15: {
      // Under a collation, the first string seen of those it holds equal.
      const text = typeof value === "string" ? value : String((value as { value?: unknown }).value);
      return `s${JSON.stringify(activeCollation()?.representative(text) ?? text)}`;
    }
    case 20: {
      const doc = asDocument(value) as Record<string, unknown>;
      return `{${keysOf(doc)
        .map((key) => `${JSON.stringify(key)}:${equalityKey(doc[key])}`)
        .join(",")}}`;
    }
    case 25:
      return `[${(value as unknown[]).map(equalityKey).join(",")}]`;
    case 30:
      return `x${subtypeOf(value)}:${Buffer.from(bytesOf(value)).toString("hex")}`;
    case 35:
      return `o${Buffer.from(objectIdBytes(value)).toString("hex")}`;
    case 40:
      return value ? "t" : "f";
    case 45:
      return `d${(value as Date).getTime()}`;
    case 47:
      return `ts${String(value)}`;
    case 50:
      return `r${JSON.stringify(regexParts(value))}`;
    default: {
      const code = value as { code: unknown; scope?: object | null };
      return `c${JSON.stringify(String(code.code))}${code.scope ? equalityKey(code.scope) : ""}`;
    }
  }
}
