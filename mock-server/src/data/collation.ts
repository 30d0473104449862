/**
 * Collations: MongoDB's language-aware comparison of strings, which a system function's CRUD and
 * aggregation calls may ask for (App Services' CRUD and aggregation reference: collation is a
 * system-context option). MongoDB compares strings with ICU's collator for the spec's locale and
 * options; so does this module, through JavaScript's `Intl.Collator` (V8's ICU, with every
 * locale's data). See docs/decisions/0055-collations.md for what maps onto what and what is refused.
 *
 * A collation applies while an evaluation runs (`withCollation`): the order of values
 * (bson-order.ts) compares string values — not field names, patterns or code — with it, and
 * equality keys (groups, sets, `$in`, `distinct`) give strings the collation holds equal one key.
 */
import { keysOf } from "./wide-keys.ts";

/** A collation as MongoDB's `collation` option holds one, checked (`locale: "simple"` is none). */
export interface CollationSpec {
  locale: string;
  caseLevel?: boolean;
  caseFirst?: "upper" | "lower" | "off";
  strength?: number;
  numericOrdering?: boolean;
  alternate?: "non-ignorable" | "shifted";
  maxVariable?: "punct" | "space";
  normalization?: boolean;
  backwards?: boolean;
  version?: string;
}

/** The collation an evaluation runs under: its comparison of two strings and its equality keys. */
export interface ActiveCollation {
  /** -1, 0 or 1 as the collation orders two strings (before any code-point tie-break). */
  compare(a: string, b: string): number;
  /** Strength 5 (identical): strings the collator holds equal are ordered by code point. */
  readonly identical: boolean;
  /** The first string seen that the collation holds equal to `text` (its equality key's text). */
  representative(text: string): string;
}

/** Strings of one equality class, found by binary search over buckets of sorted representatives. */
const bucketSize = 256;

/** ICU's collators for a spec: `primary`, and with strength 4 and `alternate: "shifted"`, `quaternary`. */
interface Collators {
  primary: Intl.Collator;
  /** Punctuation is ignored first, then told apart. */
  quaternary: Intl.Collator | null;
  identical: boolean;
}

/** Collators made lately, by their spec (a collator takes ~20 µs to make). */
const made = new Map<string, Collators>();
const madeAtMost = 32;

function collatorsOf(spec: CollationSpec): Collators {
  const key = JSON.stringify(spec);
  let collators = made.get(key);
  if (collators === undefined) {
    collators = newCollators(bcp47Locale(spec.locale), spec);
    if (made.size >= madeAtMost) made.delete(made.keys().next().value!);
    made.set(key, collators);
  }
  return collators;
}

function newCollators(locale: string, spec: CollationSpec): Collators {
  const strength = spec.strength ?? 3;
  // ICU's strengths as Intl's sensitivities: primary (with the case level, "case"), secondary
  // ("accent"; with the case level, "variant"), tertiary and above ("variant").
  const sensitivity =
    strength === 1 ? (spec.caseLevel ? "case" : "base") : strength === 2 && !spec.caseLevel ? "accent" : "variant";
  const shifted = spec.alternate === "shifted";
  const options: Intl.CollatorOptions = {
    usage: "sort",
    sensitivity,
    ignorePunctuation: shifted,
    numeric: spec.numericOrdering === true,
    caseFirst: spec.caseFirst === undefined || spec.caseFirst === "off" ? "false" : spec.caseFirst,
  };
  return {
    primary: new Intl.Collator(locale, options),
    quaternary: shifted && strength >= 4 ? new Intl.Collator(locale, { ...options, ignorePunctuation: false }) : null,
    identical: strength === 5,
  };
}

class Collated implements ActiveCollation {
  readonly identical: boolean;
  private readonly primary: Intl.Collator;
  private readonly quaternary: Intl.Collator | null;
  /** Representatives in the collation's order, in buckets of at most `bucketSize`. */
  private readonly buckets: string[][] = [];

  constructor({ primary, quaternary, identical }: Collators) {
    this.primary = primary;
    this.quaternary = quaternary;
    this.identical = identical;
  }

  compare(a: string, b: string): number {
    const order = this.primary.compare(a, b);
    if (order !== 0 || this.quaternary === null) return Math.sign(order);
    return Math.sign(this.quaternary.compare(a, b));
  }

  representative(text: string): string {
    if (this.identical) return text;
    const buckets = this.buckets;
    // The first bucket whose last representative is not before `text`.
    let low = 0;
    let high = buckets.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.compare(buckets[mid]!.at(-1)!, text) < 0) low = mid + 1;
      else high = mid;
    }
    if (low === buckets.length) {
      if (low === 0 || buckets[low - 1]!.length >= bucketSize) buckets.push([text]);
      else buckets[low - 1]!.push(text);
      return text;
    }
    const bucket = buckets[low]!;
    let from = 0;
    let to = bucket.length;
    while (from < to) {
      const mid = (from + to) >>> 1;
      const order = this.compare(bucket[mid]!, text);
      if (order === 0) return bucket[mid]!;
      if (order < 0) from = mid + 1;
      else to = mid;
    }
    bucket.splice(from, 0, text);
    if (bucket.length > bucketSize)
      buckets.splice(low, 1, bucket.slice(0, bucketSize / 2), bucket.slice(bucketSize / 2));
    return text;
  }
}

let active: ActiveCollation | null = null;

/** The collation of the evaluation running now, or null (strings by code point). */
export function activeCollation(): ActiveCollation | null {
  return active;
}

/**
 * Runs `fn` under a collation (none: `fn` as it is). Its equality classes are the evaluation's
 * own: two evaluations never share a representative.
 */
export function withCollation<T>(spec: CollationSpec | undefined, fn: () => T): T {
  if (spec === undefined) return fn();
  const previous = active;
  active = new Collated(collatorsOf(spec));
  try {
    return fn();
  } finally {
    active = previous;
  }
}

/**
 * ICU's keyword values of `@collation=` in BCP 47's spelling (`-u-co-`), where they differ
 * (Unicode's CLDR `collation.xml`).
 */
const collationTypes: Record<string, string> = {
  phonebook: "phonebk",
  traditional: "trad",
  dictionary: "dict",
  gb2312han: "gb2312",
};

const icuCollationTypes = Object.fromEntries(Object.entries(collationTypes).map(([icu, bcp]) => [bcp, icu]));

/** A BCP 47 tag as `Intl` resolves one (`de-AT-u-co-phonebk`, `en-US-u-va-posix`) in ICU's spelling. */
export function icuLocale(tag: string): string {
  const [base = "", extension = ""] = tag.split("-u-", 2);
  let name = base.replaceAll("-", "_");
  let type: string | undefined;
  const keys = extension.split("-");
  for (let i = 0; i + 1 < keys.length; i++) {
    if (keys[i] === "co") type = keys[i + 1];
    if (keys[i] === "va" && keys[i + 1] === "posix") name += "_POSIX";
  }
  return type === undefined ? name : `${name}@collation=${icuCollationTypes[type] ?? type}`;
}

/** An ICU locale id as MongoDB takes one (`de_AT@collation=phonebook`) in BCP 47's spelling (`de-AT-u-co-phonebk`). */
export function bcp47Locale(locale: string): string {
  const [base = "", keywords = ""] = locale.split("@", 2);
  const type = /(?:^|;)collation=([A-Za-z0-9]+)/.exec(keywords)?.[1]?.toLowerCase();
  const tag = base.replaceAll("_", "-");
  return type === undefined ? tag : `${tag}-u-co-${collationTypes[type] ?? type}`;
}

/** Members `comparesStrings` looks through before it takes a query as comparing strings. */
const lookedThroughAtMost = 4_096;

/**
 * Whether a query (or any value) holds a string or symbol a collation could compare: a query
 * without one matches the same under every collation. Past `lookedThroughAtMost` members, yes.
 */
export function comparesStrings(value: unknown): boolean {
  let left = lookedThroughAtMost;
  const visit = (node: unknown): boolean => {
    if (--left < 0 || typeof node === "string") return true;
    if (node === null || typeof node !== "object") return false;
    if (Array.isArray(node)) return node.some(visit);
    const proto = Object.getPrototypeOf(node);
    if (proto !== Object.prototype && proto !== null)
      return (node as { _bsontype?: unknown })._bsontype === "BSONSymbol";
    for (const key in node) if (visit((node as Record<string, unknown>)[key])) return true;
    return false;
  };
  return visit(value);
}

/**
 * The part of a query a collation cannot change: its top-level conditions that hold no string.
 * Conditions at the top level hold together, so leaving some out only widens what matches — what
 * a store may narrow its read by (its own comparisons being by code point) before the query
 * engine matches the whole query under the collation.
 */
export function uncollatedPart(query: Record<string, unknown>): Record<string, unknown> {
  const part: Record<string, unknown> = {};
  for (const key of keysOf(query)) if (!comparesStrings(query[key])) part[key] = query[key];
  return part;
}
