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
import { heavy } from "./query-limits.ts";

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

  /**
   * Charges a run over `input` to the evaluation's budget before it starts (one run cannot stop
   * midway): about a unit a character, more for a large program (RE2 may fall back from its DFA
   * to stepping through the program: `[\x{0}-\x{10FFFF}]{1000}` took 1.3 µs a character here).
   */
  private weigh(input: string): void {
    if (input.length > 1024) heavy(input.length * Math.max(1, this.re.programSize() / 8), "$regex");
  }

  /** Whether the pattern matches somewhere in `input`. */
  test(input: string): boolean {
    this.weigh(input);
    return this.re.test(input);
  }

  /** The first match (a RegExp-like match array: index in UTF-16 units, unmatched groups undefined), or null. */
  exec(input: string): RegExpExecArray | null {
    this.weigh(input);
    return this.re.exec(input) as RegExpExecArray | null;
  }

  /** Every non-overlapping match, an empty match advancing by one character. */
  matchAll(input: string): IterableIterator<RegExpExecArray> {
    this.weigh(input);
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

/** Units of work (about a comparison each: query-limits.ts `heavy`) one compiled instruction costs. */
const unitsPerInstruction = 100;
/** Past this many instructions the estimate stops counting (any slice refuses it long before). */
const compileCeiling = 1_000_000;

/**
 * About how many instructions RE2 compiles a pattern to: one for each character, escape or class,
 * a repetition `{n}`, `{n,}` or `{n,m}` writing out what it repeats as many times as its largest
 * count, a group the sum of what it holds. Stops once past `ceiling`.
 */
export function programEstimate(pattern: string, ceiling = Number.POSITIVE_INFINITY): number {
  /** The sums of the groups still open, outermost first. */
  const open: number[] = [];
  let outer = 0;
  let total = 0;
  /** What a quantifier here would repeat: the last atom or group. */
  let last = 0;
  const atom = (size: number) => {
    total += size;
    last = size;
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === "Q") {
        // Literal text to \E: a character each.
        const end = pattern.indexOf("\\E", i + 2);
        const stop = end === -1 ? pattern.length : end;
        total += stop - (i + 2);
        last = 1;
        i = end === -1 ? pattern.length : end + 1;
        continue;
      }
      if ((next === "x" || next === "p" || next === "P") && pattern[i + 2] === "{") {
        const end = pattern.indexOf("}", i + 3);
        i = end === -1 ? pattern.length : end;
      } else i += next === "p" || next === "P" ? 2 : 1;
      atom(1);
    } else if (c === "[") {
      // A class to its closing bracket (one first, or after ^, is a member), escapes and [:name:] inside.
      let j = i + 1;
      if (pattern[j] === "^") j++;
      if (pattern[j] === "]") j++;
      for (; j < pattern.length && pattern[j] !== "]"; j++) {
        if (pattern[j] === "\\") j++;
        else if (pattern[j] === "[" && pattern[j + 1] === ":") {
          const end = pattern.indexOf(":]", j + 2);
          if (end !== -1) j = end + 1;
        }
      }
      i = j;
      atom(1);
    } else if (c === "(") {
      if (pattern[i + 1] === "?") {
        // Flags alone, `(?i)`, open no group; `(?:`, `(?i:`, `(?P<name>`, `(?<name>` do.
        const flags = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(i, i + 16));
        if (flags) {
          i += flags[0].length - 1;
          continue;
        }
        const head = /^\(\?(?:[a-zA-Z-]*:|P?<[^>]*>|<[=!])/.exec(pattern.slice(i, i + 64));
        if (head) i += head[0].length - 1;
      }
      open.push(total);
      total = 0;
      last = 0;
    } else if (c === ")") {
      const inner = total;
      total = (open.pop() ?? 0) + inner;
      last = inner;
    } else if (c === "{") {
      const quantifier = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (quantifier) {
        const least = Number(quantifier[1]);
        const most = quantifier[2] === undefined ? least : quantifier[2] === "" ? least + 1 : Number(quantifier[2]);
        const times = Math.max(1, least, most);
        total += last * (times - 1) + 1;
        last *= times;
        i += quantifier[0].length - 1;
      } else atom(1);
    } else if (c === "*" || c === "+" || c === "?") total += 1;
    else if (c === "|") {
      total += 1;
      last = 0;
    } else atom(1);
    if (total > ceiling) return total;
  }
  for (const sum of open) outer += sum;
  return outer + total;
}

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
  // Compiling is one step, of about 3 µs an instruction here (RE2 writes each repetition out):
  // on the main thread's slice a large program is left to a worker before it starts.
  heavy(programEstimate(source, compileCeiling) * unitsPerInstruction, "$regex");
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
