/**
 * The queries both stores evaluate exactly as MongoDB does, without the query engine: a
 * conjunction (top level, `$and`, a one-clause `$or`) of equalities of a top-level field to a
 * string, a boolean or an ObjectId (`f: v`, `{$eq: v}`, `{$in: [v…]}` of up to 256 values; an
 * array holding the value matches too, one level deep, as in MongoDB) and of `_id` to strings or
 * ObjectIds. PostgreSQL evaluates them in SQL (pushdown.ts); the memory store through its indexes.
 * For such a query a store can count matches without handing documents back, and what it hands
 * back for it all match (docs/decisions/0018-fair-shares.md).
 */
import { ObjectId } from "bson";
import { type Document, isDocument } from "../data/documents.ts";
import { finish, inTurns } from "../data/turns.ts";
import { keysOf } from "../data/wide-keys.ts";

export type ExactValue = string | boolean | ObjectId;

export interface ExactCondition {
  field: string;
  /** Any of these (an array holding one matches too, except for `_id`). */
  values: ExactValue[];
}

/** The most values of one field's `$in` evaluated exactly. */
export const maxExactAlternatives = 256;

/** Control characters and surrogates: left to the query engine (SQL's JSON path may refuse them). */
export function awkward(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0xd800 && code <= 0xdfff)) return true;
  }
  return false;
}

const exactValue = (v: unknown, id: boolean): v is ExactValue =>
  v instanceof ObjectId || (typeof v === "string" && !awkward(v)) || (!id && typeof v === "boolean");

function values(condition: unknown, id: boolean): ExactValue[] | null {
  if (!isDocument(condition)) return exactValue(condition, id) ? [condition] : null;
  const keys = Object.keys(condition);
  if (keys.length !== 1) return null;
  if (keys[0] === "$eq") return exactValue(condition.$eq, id) ? [condition.$eq] : null;
  const list = condition.$in;
  if (keys[0] === "$in" && Array.isArray(list) && list.length > 0 && list.length <= maxExactAlternatives)
    return list.every((v) => exactValue(v, id)) ? (list as ExactValue[]) : null;
  return null;
}

/**
 * The conditions of an exact query (none: it matches every document), or null when it is not one.
 * Kept for each query object (an action asks more than once; queries are never changed): a very
 * wide query's conditions take a while (70–120 ms for 200,000 here; `exactConditionsInSlices`).
 */
export function exactConditions(query: Document): ExactCondition[] | null {
  let known = decided.get(query);
  if (known === undefined) {
    known = finish(decide(query));
    decided.set(query, known);
  }
  return known;
}

/**
 * `exactConditions`, giving other requests a turn between steps: a very wide query's 200,000
 * exact conditions took 70–120 ms in one. Kept as `exactConditions` keeps them.
 */
export async function exactConditionsInSlices(query: Document): Promise<ExactCondition[] | null> {
  let known = decided.get(query);
  if (known === undefined) {
    known = await inTurns(decide(query));
    decided.set(query, known);
  }
  return known;
}

const decided = new WeakMap<Document, ExactCondition[] | null>();

/** Conditions looked at in one step of a sliced walk of a query. */
export const conditionsPerStep = 1024;

function* decide(query: Document): Generator<void, ExactCondition[] | null> {
  const found: ExactCondition[] = [];
  let looked = 0;
  function* visit(q: Document): Generator<void, boolean> {
    // (A loop over the keys, not entries: a query that is not exact is told at its first such key.
    // A wide query's keys are kept: wide-keys.ts.)
    for (const key of keysOf(q)) {
      if (++looked % conditionsPerStep === 0) yield;
      const condition = q[key];
      if (key === "$and" && Array.isArray(condition) && condition.length > 0) {
        for (const clause of condition) if (!isDocument(clause) || !(yield* visit(clause))) return false;
        continue;
      }
      if (key === "$or" && Array.isArray(condition) && condition.length === 1 && isDocument(condition[0])) {
        if (!(yield* visit(condition[0]))) return false;
        continue;
      }
      if (key === "" || key.startsWith("$") || key.includes(".") || awkward(key)) return false;
      const accepted = values(condition, key === "_id");
      if (!accepted) return false;
      found.push({ field: key, values: accepted });
    }
    return true;
  }
  return (yield* visit(query)) ? found : null;
}

const same = (value: unknown, wanted: ExactValue) =>
  wanted instanceof ObjectId ? value instanceof ObjectId && value.equals(wanted) : value === wanted;

/** Whether a document meets exact conditions (as MongoDB, and SQL's JSON path in lax mode, decide them). */
export function meetsExactly(doc: Document, conditions: ExactCondition[]): boolean {
  return conditions.every(({ field, values }) => {
    const value = doc[field];
    if (values.some((wanted) => same(value, wanted))) return true;
    return field !== "_id" && Array.isArray(value) && value.some((item) => values.some((wanted) => same(item, wanted)));
  });
}

/**
 * The equalities a condition of `field` implies, for a store to narrow a read by (never exact: the
 * query engine decides): `{$all: [v…]}` of values that are not arrays or documents, each `field: v`
 * (MongoDB reads `$all` as the `$and` of those equalities); `{$elemMatch: {g: c, …}}`, each plain
 * field's `"field.g": c` (an element meeting it has that path). Undefined for any other condition.
 */
export function impliedConditions(field: string, condition: unknown): [string, unknown][] | undefined {
  if (!isDocument(condition)) return undefined;
  const keys = Object.keys(condition);
  if (keys.length !== 1) return undefined;
  const inner = condition[keys[0]!];
  if (keys[0] === "$all" && Array.isArray(inner))
    return inner.filter((v) => !Array.isArray(v) && !isDocument(v)).map((v) => [field, v]);
  if (keys[0] === "$elemMatch" && isDocument(inner))
    return Object.keys(inner)
      .filter((key) => !key.startsWith("$"))
      .map((key) => [`${field}.${key}`, inner[key]]);
  return undefined;
}

/**
 * The steps of a top-level field or a dotted path a store may narrow a read by, or undefined when
 * its path could miss what MongoDB's matches: an empty step, one of `$`, or in a dotted path one of
 * digits (MongoDB reads `a.0` as an array's index too; a top-level `"0"` is a field).
 */
export function pathSteps(field: string): string[] | undefined {
  const steps = field.split(".");
  const plain = (step: string) => step !== "" && !step.startsWith("$") && (steps.length === 1 || !/^\d+$/.test(step));
  return steps.every(plain) ? steps : undefined;
}
