/**
 * Which part of a MongoDB query (the caller's, narrowed by the rule's filter) PostgreSQL evaluates
 * to fetch fewer rows. Only conditions whose matches are a superset of MongoDB's are pushed down —
 * the query engine still runs the whole query on what comes back — so a condition is pushed only
 * when its SQL form cannot miss a document MongoDB would match:
 *
 * - `_id` equal to a string, an ObjectId or a number, or `$in` of those → the primary key;
 * - a top-level field equal to a string, an ObjectId or a boolean (`f: v`, `f: {$eq: v}`,
 *   `f: {$in: [v…]}` of up to 256 values) → the JSON path predicate `doc @@ '$."f" == v'` (lax
 *   mode: it matches an array holding the value too, as MongoDB's equality does), served by the GIN
 *   index on `doc`;
 * - a dotted path (`"owner.id": v`) equal to a string, an ObjectId or a boolean, the same way
 *   (`$."owner"."id" == v`: lax mode goes through an array at each step, as MongoDB's paths do);
 *   not a path with a step of digits (MongoDB reads it as an array index too) or one of `$`
 *   (`pathSteps`, the memory store's too);
 * - a field or a dotted path equal to a number (a JS number: ints, doubles, an integer past 2^53;
 *   or an Int64 past 2^53, which documents keep as a Long, as `"$numberLong"`) → its one text as
 *   this server writes it (`$."f"."$numberInt" == "5"`; 0 also `-0.0`), served by the GIN index;
 *   and where the field may hold a Decimal128 (a top-level field that has held one in the
 *   collection, `collections.decimal_fields`; a dotted path in a collection that has held one
 *   anywhere, `collections.decimals`; both read in the statement), also any Decimal128 there (of
 *   any text: `5.0` equals 5), which the index cannot look up and the query engine then decides;
 * - a field or a dotted path equal to a Decimal128 → as the number it equals (numbers compare by
 *   exact value: 7.00 is 7, 2.50 the double 2.5), or, equal to none (0.1 is no double), only the
 *   Decimal128 alternative: where none is held, nothing matches; NaN and the infinities are the
 *   engine's;
 * - the conditions of an `$and` (and of a one-clause `$or`), each as above;
 * - an `$or` whose every clause pushes a condition down → the clauses' conditions OR-ed (a rule
 *   `{$or: [{owner_id: …}, {shared_with: …}]}`: the index finds both sets of rows);
 * - the equalities an `$all` or an `$elemMatch` implies (store/exact-query.ts `impliedConditions`),
 *   each as above.
 *
 * At most `maxPushedConditions` conditions a statement; the rest (and everything else: dates,
 * null, regular expressions, `$expr`, comparisons…) is left to the query engine. docs/decisions/0008 lists this too. What it pushes
 * down is exact but for numbers (store/exact-query.ts): for an exact query whose conditions were
 * all pushed (not `truncated`) the rows are the matches.
 */
import { Decimal128, Long, ObjectId, Timestamp } from "bson";
import { equalBson } from "../../data/bson-order.ts";
import { type Document, isDocument } from "../../data/documents.ts";
import { numberWrapper } from "../../data/ejson-text.ts";
import { finish, inTurns } from "../../data/turns.ts";
import { keysOf } from "../../data/wide-keys.ts";
import { awkward, conditionsPerStep, impliedConditions, maxExactAlternatives, pathSteps } from "../exact-query.ts";
import { idRowKey } from "./row-keys.ts";

export interface Pushdown {
  /** SQL conditions, AND-ed; `$n` placeholders numbered from `firstParam`. */
  where: string[];
  params: unknown[];
  /** Whether conditions past `maxPushedConditions` were looked at and left out. */
  truncated: boolean;
}

/**
 * The most conditions pushed down into one statement (each one parameter, a number's three):
 * PostgreSQL takes at most 65,535 parameters a statement (a find of 70,000 equalities was refused
 * as a broken connection), and a few conditions narrow a read as well as many.
 */
export const maxPushedConditions = 64;

/** A Decimal128 of the query that no int, long or double equals: only a Decimal128 can. */
const noNumber = Symbol("no number equals it");

type Scalar = string | boolean | ObjectId | number | Long | typeof noNumber;

function scalar(value: unknown): Scalar | undefined {
  if (typeof value === "string" || typeof value === "boolean" || typeof value === "number") return value;
  if (value instanceof ObjectId) return value;
  // An Int64 past 2^53, as the documents keep it; one within is the number it is (a Timestamp is a
  // Long to the library, and no number).
  if (value instanceof Long && !(value instanceof Timestamp))
    return value.lessThanOrEqual(Number.MAX_SAFE_INTEGER) && value.greaterThanOrEqual(Number.MIN_SAFE_INTEGER)
      ? value.toNumber()
      : value;
  if (value instanceof Decimal128) return decimalAsNumber(value);
  return undefined;
}

/**
 * The one int, long or double a Decimal128 equals (numbers compare by exact value: 7.00 is 7, 0.1
 * is no double), `noNumber`, or undefined for NaN and the infinities (left to the engine).
 */
function decimalAsNumber(value: Decimal128): Scalar | undefined {
  const text = value.toString();
  if (!/^-?\d/.test(text)) return undefined;
  const nearest = Number(text);
  if (Number.isFinite(nearest) && equalBson(nearest, value)) return scalar(nearest);
  // An integer past 2^53 within 64 bits: a long.
  const integral = /^-?\d+$/.test(text) ? text : undefined;
  if (integral !== undefined) {
    const long = Long.fromString(integral);
    if (long.toString() === integral) return scalar(long);
  }
  return noNumber;
}

/** A JSON path string literal (JSON's escapes are the path language's). */
const literal = (text: string) => JSON.stringify(text);

/** The alternatives a value's equality pushes down: the index's, and any Decimal128 at the field (numbers). */
interface Alternatives {
  paths: string[];
  decimal?: string;
}

/** `$."f" == v`: the field (an ObjectId's hex under `$oid`, as canonical Extended JSON stores it). */
function pathEquals(steps: string[], value: Scalar): Alternatives | undefined {
  const field = `$${steps.map((step) => `.${literal(step)}`).join("")}`;
  if (typeof value === "boolean") return { paths: [`${field} == ${value}`] };
  if (value === noNumber) return { paths: [], decimal: `exists(${field}."$numberDecimal")` };
  if (typeof value === "number" || value instanceof Long) {
    // 0 and -0 are equal: both texts; a Decimal128 may equal any number.
    const texts =
      value instanceof Long
        ? [{ wrapper: "$numberLong", text: value.toString() }]
        : value === 0
          ? [numberWrapper(0), numberWrapper(-0)]
          : [numberWrapper(value)];
    return {
      paths: texts.map(({ wrapper, text }) => `${field}.${literal(wrapper)} == ${literal(text)}`),
      decimal: `exists(${field}."$numberDecimal")`,
    };
  }
  if (value instanceof ObjectId) return { paths: [`${field}."$oid" == ${literal(value.toHexString())}`] };
  return awkward(value) ? undefined : { paths: [`${field} == ${literal(value)}`] };
}

/**
 * The JSON path of alternatives with or without the Decimal128 one as the field has or has never held a
 * Decimal128 in the statement's collection (`$1` app, `$2` database, `$3` collection: every
 * statement's); a dotted path (no `field`) as the collection has or has never held one anywhere.
 * They are read in the statement, in its snapshot: the document that held the decimal is there
 * too. Without a decimal the path holds `==` predicates only, which the GIN index serves; `exists`
 * it cannot.
 */
const withDecimalsIfHeld = (field: string | undefined, withDecimals: string, without: string) =>
  `(SELECT CASE WHEN ${field === undefined ? "c.decimals" : `${field} = ANY(c.decimal_fields)`} THEN ${withDecimals} ELSE ${without} END FROM collections c
     WHERE c.app_id = $1 AND c.db = $2 AND c.coll = $3)`;

/** The values an equality condition accepts, or undefined when it is not a plain equality. */
function equalValues(condition: unknown, accept: (v: unknown) => boolean): unknown[] | undefined {
  if (!isDocument(condition)) return accept(condition) ? [condition] : undefined;
  const keys = Object.keys(condition);
  if (keys.length !== 1) return undefined;
  const key = keys[0];
  if (key === "$eq") return accept(condition.$eq) ? [condition.$eq] : undefined;
  if (key === "$in" && Array.isArray(condition.$in) && condition.$in.length > 0 && condition.$in.every(accept))
    return condition.$in;
  return undefined;
}

const isIdValue = (v: unknown) =>
  typeof v === "string" || v instanceof ObjectId || (typeof v === "number" && Number.isFinite(v));

/** The most values of one field's `$in` pushed down as JSON path alternatives. */
const maxAlternatives = maxExactAlternatives;

/**
 * `hidden`: each value as a subquery, `(SELECT $n::type)`, which no plan knows: for a statement
 * planned once for every value (see `hiddenValue`).
 */
export function pushdown(query: Document, firstParam: number, { hidden = false } = {}): Pushdown {
  const into: Pushdown = { where: [], params: [], truncated: false };
  finish(conditions(query, firstParam, hidden, into));
  return into;
}

/**
 * `pushdown` giving other requests a turn between steps: a very wide query's conditions (200,000)
 * took 80 ms in one (its keys are kept: data/wide-keys.ts).
 */
export async function pushdownInSlices(query: Document, firstParam: number, { hidden = false } = {}) {
  const into: Pushdown = { where: [], params: [], truncated: false };
  await inTurns(conditions(query, firstParam, hidden, into));
  return into;
}

/** Adds the query's conditions pushed down to `into`, a step (`yield`) every `conditionsPerStep`. */
function* conditions(query: Document, firstParam: number, hidden: boolean, into: Pushdown): Generator<void> {
  const { params } = into;
  const param = (value: unknown, type: string, hide = hidden) => {
    params.push(value);
    const placeholder = `$${firstParam + params.length - 1}::${type}`;
    return hide ? hiddenValue(placeholder) : placeholder;
  };
  let looked = 0;
  let pushed = 0;
  /** The condition of one field's equality, or undefined (no parameter taken). */
  function equality(key: string, condition: unknown): string | undefined {
    if (key.startsWith("$") || awkward(key)) return undefined;
    if (key === "_id") {
      const ids = equalValues(condition, isIdValue);
      // (A subquery in ANY( ) would be read as a set of rows: the cast makes it the array.)
      return ids && `id_key = ANY(${param(ids.map(idRowKey), "text[]")}${hidden ? "::text[]" : ""})`;
    }
    const steps = pathSteps(key);
    const values = steps && equalValues(condition, (v) => scalar(v) !== undefined);
    // A path of 100,000 alternatives is past what PostgreSQL evaluates (and an index would help little).
    if (!steps || !values || values.length > maxAlternatives) return undefined;
    const alternatives = new Set<string>();
    let decimal: string | undefined;
    for (const value of values) {
      const found = pathEquals(steps, scalar(value) as Scalar);
      if (found === undefined) return undefined;
      for (const path of found.paths) alternatives.add(path);
      decimal ??= found.decimal;
    }
    const paths = [...alternatives].join(" || ");
    if (decimal === undefined) return `doc @@ ${param(paths, "jsonpath")}`;
    // (Each its own parameter, never hidden again: the subquery hides them all. A dotted path's
    // decimals are the collection's. No number's text: where no Decimal128 is, nothing matches.)
    const [field, withDecimals, without] = [
      steps.length === 1 ? param(key, "text", false) : undefined,
      param(paths === "" ? decimal : `${paths} || ${decimal}`, "jsonpath", false),
      param(paths === "" ? "false" : paths, "jsonpath", false),
    ];
    return `doc @@ ${withDecimalsIfHeld(field, withDecimals, without)}`;
  }
  /** Adds `q`'s conditions to `where` (AND-ed), while fewer than `maxPushedConditions` are. */
  function* visit(q: Document, where: string[]): Generator<void> {
    for (const key of keysOf(q)) {
      if (++looked % conditionsPerStep === 0) yield;
      const condition = q[key];
      if (key === "$and" && Array.isArray(condition)) {
        for (const clause of condition) if (isDocument(clause)) yield* visit(clause, where);
        continue;
      }
      if (key === "$or" && Array.isArray(condition) && condition.length === 1 && isDocument(condition[0])) {
        yield* visit(condition[0], where);
        continue;
      }
      // (Leaving a condition out only widens what the rows hold; the engine decides.)
      if (pushed >= maxPushedConditions) {
        into.truncated = true;
        continue;
      }
      if (key === "$or" && Array.isArray(condition)) {
        const taken = { params: params.length, pushed };
        const alternatives = yield* either(condition);
        if (alternatives !== undefined) where.push(alternatives);
        else {
          params.length = taken.params;
          pushed = taken.pushed;
        }
        continue;
      }
      for (const [field, implied] of impliedConditions(key, condition) ?? [[key, condition]]) {
        if (pushed >= maxPushedConditions) {
          into.truncated = true;
          break;
        }
        const found = equality(field, implied);
        if (found === undefined) continue;
        where.push(found);
        pushed++;
      }
    }
  }
  /**
   * An `$or`'s clauses' conditions OR-ed (its clauses' conditions count against the cap), or
   * undefined when a clause pushes none down: that clause could match any document.
   */
  function* either(clauses: unknown[]): Generator<void, string | undefined> {
    if (clauses.length === 0) return undefined;
    const each: string[] = [];
    for (const clause of clauses) {
      if (!isDocument(clause)) return undefined;
      const own: string[] = [];
      yield* visit(clause, own);
      if (own.length === 0) return undefined;
      each.push(own.length === 1 ? own[0]! : `(${own.join(" AND ")})`);
    }
    return `(${each.join(" OR ")})`;
  }
  yield* visit(query, into.where);
}

/**
 * A statement's value as a subquery: planned once per connection (a named statement), PostgreSQL
 * plans it for its values five times, then keeps the plan for every value unless the plans for
 * the values were estimated cheaper. With its values hidden so, both are estimated alike and the
 * plan for every value is kept, with no `SET plan_cache_mode` around the statement (it was three
 * statements a read). For a statement whose plan does not depend on the values (a filtered read of
 * all of its matches: through the GIN index whatever they are), never for one whose plan does.
 */
export const hiddenValue = (placeholder: string) => `(SELECT ${placeholder})`;
