/**
 * MongoDB regular expressions on a linear-time engine (re2js, a pure-JS RE2): every pattern runs
 * in time proportional to its input, so no query, filter or pipeline can backtrack the server into
 * a stall. MongoDB's options are honoured: `i`, `m`, `s`, `x` (extended: unescaped whitespace and
 * `#` comments outside character classes are ignored) and `u` (always on). What RE2 cannot run in
 * linear time (backreferences, lookahead, atomic groups, possessive quantifiers) is refused with
 * MongoDB's "Regular expression is invalid" error; captureless lookbehinds are supported.
 * See docs/decisions/0006-query-limits.md.
 */
import { BSONRegExp } from "bson";
import { RE2JS } from "re2js";
import { appServicesErrors as errors } from "../errors/catalogue.ts";

/** MongoDB's limit on a pattern's length [server: "Regular expression is too long"]. */
export const maxPatternLength = 32_764;
const validOptions = new Set(["i", "m", "s", "x", "u"]);
const cacheSize = 512;

/** A compiled MongoDB regular expression (pattern and options as MongoDB keeps them). */
export class MongoRegex {
  constructor(
    readonly pattern: string,
    /** Sorted, as MongoDB and BSON keep them. */
    readonly options: string,
    private readonly re: RE2JS,
  ) {}

  /** Whether the pattern matches somewhere in `input`. */
  test(input: string): boolean {
    return this.re.test(input);
  }

  /** The first match (a RegExp-like match array: index in UTF-16 units, unmatched groups undefined), or null. */
  exec(input: string): RegExpExecArray | null {
    return this.re.exec(input) as RegExpExecArray | null;
  }

  /** Every non-overlapping match, an empty match advancing by one character. */
  matchAll(input: string): IterableIterator<RegExpExecArray> {
    return this.re.matchAll(input) as IterableIterator<RegExpExecArray>;
  }

  /** Whether a stored regular-expression value equals this one (MongoDB compares them so). */
  sameAs(value: BSONRegExp | RegExp): boolean {
    const [pattern, options] =
      value instanceof RegExp ? [value.source, jsFlagsToOptions(value.flags)] : [value.pattern, value.options];
    return pattern === this.pattern && sortOptions(options) === this.options;
  }
}

function sortOptions(options: string): string {
  return [...options].sort().join("");
}

/** A JavaScript RegExp's flags as MongoDB options (`g` and `y` have no meaning there). */
export function jsFlagsToOptions(flags: string): string {
  return [...flags].filter((f) => f === "i" || f === "m" || f === "s" || f === "u").join("");
}

/**
 * PCRE's extended mode (`x`): whitespace and `#`-to-end-of-line comments outside character
 * classes are dropped; escaped characters and `\Q…\E` quotes are kept as they are.
 */
export function stripExtended(pattern: string): string {
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      if (pattern[i + 1] === "Q") {
        const end = pattern.indexOf("\\E", i + 2);
        const stop = end === -1 ? pattern.length : end + 2;
        out += pattern.slice(i, stop);
        i = stop - 1;
        continue;
      }
      out += pattern.slice(i, i + 2);
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      // A `]` right after `[` or `[^` is a literal member, not the end of the class.
      if (pattern[i + 1] === "^") out += pattern[++i];
      if (pattern[i + 1] === "]") out += pattern[++i];
      continue;
    }
    if (c === "#") {
      while (i < pattern.length && pattern[i] !== "\n") i++;
      continue;
    }
    if (/\s/.test(c)) continue;
    out += c;
  }
  return out;
}

/** PCRE's inline comments `(?#…)`, which RE2 does not know, removed outside character classes. */
function stripInlineComments(pattern: string): string {
  if (!pattern.includes("(?#")) return pattern;
  let out = "";
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      out += pattern.slice(i, i + 2);
      i++;
    } else if (inClass) {
      if (c === "]") inClass = false;
      out += c;
    } else if (c === "[") {
      inClass = true;
      out += c;
    } else if (pattern.startsWith("(?#", i)) {
      const end = pattern.indexOf(")", i);
      i = end === -1 ? pattern.length : end;
    } else {
      out += c;
    }
  }
  return out;
}

const unsupported =
  /invalid escape sequence: `\\[1-9]`|unsupported Perl syntax: `\(\?[=!>]|invalid nested repetition operator: `[*+?}]\+`/;

const cache = new Map<string, MongoRegex>();

/**
 * Compiles a MongoDB pattern with MongoDB options; `context` prefixes the errors the way the
 * server does for aggregation operators (`$regexMatch`), empty for query operators.
 */
export function compileRegex(pattern: string, options: string, context = ""): MongoRegex {
  const key = `${options}\u0000${pattern}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const prefix = context ? `${context} ` : "";
  for (const flag of options) {
    if (!validOptions.has(flag)) throw errors.mongo(`${prefix}invalid flag in regex options: ${flag}`);
  }
  if (pattern.includes("\u0000"))
    throw errors.mongo(`${context ? `${context}: r` : "R"}egular expression cannot contain an embedded null byte`);
  if (pattern.length > maxPatternLength) throw errors.mongo(`${prefix}Regular expression is too long`);
  let flags = RE2JS.LOOKBEHINDS;
  if (options.includes("i")) flags |= RE2JS.CASE_INSENSITIVE;
  if (options.includes("m")) flags |= RE2JS.MULTILINE;
  if (options.includes("s")) flags |= RE2JS.DOTALL;
  let source = stripInlineComments(pattern);
  if (options.includes("x")) source = stripExtended(source);
  let re: RE2JS;
  try {
    re = RE2JS.compile(source, flags);
  } catch (error) {
    const detail = (error as Error).message.replace(/^error parsing regexp: /, "");
    const why = unsupported.test(detail)
      ? " (the emulator runs regular expressions in linear time: backreferences, lookahead, atomic groups and possessive quantifiers are not supported)"
      : "";
    throw errors.mongo(
      context ? `Invalid Regex in ${context}: ${detail}${why}` : `Regular expression is invalid: ${detail}${why}`,
    );
  }
  const compiled = new MongoRegex(pattern, sortOptions(options), re);
  cache.set(key, compiled);
  if (cache.size > cacheSize) cache.delete(cache.keys().next().value as string);
  return compiled;
}

/** A regular-expression value (BSON, JavaScript, or already compiled) as a compiled regex. */
export function compileRegexValue(value: BSONRegExp | RegExp | MongoRegex, context = ""): MongoRegex {
  if (value instanceof MongoRegex) return value;
  if (value instanceof RegExp) return compileRegex(value.source, jsFlagsToOptions(value.flags), context);
  return compileRegex(value.pattern, value.options, context);
}

export function isRegexValue(value: unknown): value is BSONRegExp | RegExp {
  return value instanceof BSONRegExp || value instanceof RegExp;
}
