/**
 * The evaluating part of every MongoDB action and stream filter, as plain data in, plain data out,
 * so that the same code runs on the main thread (under its slice) or in a query worker (under the
 * whole budget and a hard timeout): query-workers.ts. A job never reads or writes the store and
 * never changes the documents it is given; writes get a decision (which documents change, and how)
 * that the action applies. See docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { Long } from "bson";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { keptSize, maxBsonObjectSize } from "./bson-size.ts";
import { cloneValue, type Document, idFirst, idRefusal, idRepr, isDocument, toEJSONText } from "./documents.ts";
import { forbiddenPath, ownField, setOwnField } from "./own-fields.ts";
import { aggregate, checkUpdatePipeline, compileQuery, find } from "./query-engine.ts";
import {
  checkValue,
  logicalSize,
  mainThreadSlice,
  NeedsWorker,
  newDocumentId,
  onMainThreadSlice,
} from "./query-limits.ts";
import { isRegexValue } from "./regex.ts";
import type { Condition, FieldCut, FieldTree, ReadShape } from "./role-rules.ts";
import { shellText } from "./shell-text.ts";
import { pipelineDelta } from "./update-delta.ts";
import { applyUpdate, type UpdateContext } from "./updater.ts";
import { hasNoKeys, keysOf } from "./wide-keys.ts";
import { holdsWide } from "./wide-values.ts";

/** The most documents `find` and `aggregate` answer (the service's cap). */
export const maxResults = 50_000;

/** mingo's error texts in the words of the MongoDB server [live texts in the wire reference]. */
function mongoMessage(message: string): string {
  let m = /unknown top level operator: (\$\w+)/.exec(message);
  if (m) return `unknown top level operator: ${m[1]}.`;
  m = /unknown query operator (\$\w+)/.exec(message);
  if (m) return `unknown operator: ${m[1]}`;
  m = /Unknown update operator: '(\$\w+)'/.exec(message);
  if (m) return `Unknown modifier: ${m[1]}`;
  if (message.startsWith("Performing an update on the path")) return message.replace(/\.$/, "");
  m = /unregistered pipeline operator (\$\w+)/.exec(message);
  if (m) return `Unrecognized pipeline stage name: '${m[1]}'.`;
  return message;
}

/** Any error of an evaluation as the service answers it (a move to a worker passes through). */
export function mongoError(error: unknown): never {
  if (error instanceof NeedsWorker) throw error;
  if ((error as { errorCode?: string }).errorCode) throw error;
  if (error instanceof RangeError && /call stack/i.test(error.message))
    throw errors.mongo("the query or document is nested too deeply");
  throw errors.mongo(mongoMessage(error instanceof Error ? error.message : String(error)));
}

/** The documents of `docs` that match `query`. */
export function matching(docs: Document[], query: Document): Document[] {
  if (hasNoKeys(query)) return docs;
  // A query of very many conditions, or of large values to compare with (each a wide-values.ts
  // `holdsWide`: more than 4,096 members, or a wide object or array anywhere), is compiled where it
  // runs whole, not on the main thread's slice, which cannot stop a compile midway (200,000
  // conditions: 1.7 s; an equality with an object of 200,000 fields a dozen levels down, which
  // the compile copies: 0.2 s).
  if (onMainThreadSlice() && holdsWide(query)) throw new NeedsWorker("a query of many conditions or large values");
  const q = compileQuery(query);
  return docs.filter((d) => q.test(d));
}

export function passes(filter: Document, doc: Document): boolean {
  return passesFor(filter)(doc);
}

/** `passes` for many documents: the filter compiled once (~7 µs a compile, against ~0.3 a test). */
export function passesFor(filter: Document): (doc: Document) => boolean {
  if (Object.keys(filter).length === 0) return () => true;
  const query = compileQuery(filter);
  return (doc) => query.test(doc);
}

/**
 * The collections a pipeline reads besides its own: the `from` of its `$lookup` and `$graphLookup`
 * stages, its `$unionWith`s', and theirs in the pipelines of `$lookup`, `$unionWith` and `$facet`.
 * Only the stages are looked at, by name, never what they compute: a `$group` of 200,000 fields is
 * not walked (it held the main thread ~100 ms).
 */
export function referencedCollections(pipeline: unknown, found = new Set<string>()): Set<string> {
  if (!Array.isArray(pipeline)) return found;
  for (const stage of pipeline) {
    if (!isDocument(stage)) continue;
    const { $lookup: lookup, $graphLookup: graphLookup, $unionWith: union, $facet: facet } = stage;
    for (const joined of [lookup, graphLookup])
      if (isDocument(joined) && typeof joined.from === "string") found.add(joined.from);
    if (isDocument(lookup)) referencedCollections(lookup.pipeline, found);
    if (typeof union === "string") found.add(union);
    else if (isDocument(union)) {
      if (typeof union.coll === "string") found.add(union.coll);
      referencedCollections(union.pipeline, found);
    }
    if (isDocument(facet)) for (const name of keysOf(facet)) referencedCollections(facet[name], found);
  }
  return found;
}

// ---------------------------------------------------------------------------------------------
// Reads

/** `shape`: how the rules cut the documents down before the action sees them (role-rules.ts). */
export type ReadJob =
  | {
      kind: "find";
      query: Document;
      projection: Document;
      sort: Document;
      limit: number;
      one: boolean;
      shape?: ReadShape;
    }
  | { kind: "count"; query: Document; limit?: number }
  | {
      kind: "aggregate";
      stages: Document[];
      /** The read rule's filter, when it is not the first stage. */
      filter?: Document;
      shape?: ReadShape;
      /** How the rules let the caller read the other collections the pipeline reads (those it names). */
      joined?: Record<string, JoinedRule>;
      /** The results go into a collection (`$out`, `$merge`), not a reply: all of them, past its cap. */
      written?: boolean;
    }
  /**
   * A `findOneAnd…` action's projection of the document it answers; `query`, the action's filter,
   * where a positional projection (`a.$`) finds its element.
   */
  | { kind: "project"; projection: Document; shape?: ReadShape; query?: Document };

const conditionTest = (condition: Condition): ((doc: Document) => boolean) =>
  typeof condition === "boolean" ? () => condition : passesFor(condition);

/** What a role grants of one top-level field: all of it, none, or its embedded fields as a tree grants them. */
export type FieldAccess = boolean | FieldTree;

/**
 * Which top-level fields of a document its role (the first of `cuts` that applies) reads or
 * writes: all (null), or what the test answers for each; a document no role applies to, none.
 */
export function fieldsOf(cuts: FieldCut[]): (doc: Document) => ((key: string) => FieldAccess) | null {
  const roles = cuts.map((role) => ({
    applies: conditionTest(role.when),
    whole: conditionTest(role.whole),
    fields: new Set(role.fields),
    others: role.others,
    embedded: new Map(Object.entries(role.embedded ?? {})),
  }));
  return (doc) => {
    if (roles.length === 0) return null;
    const role = roles.find((one) => one.applies(doc));
    if (!role) return () => false;
    if (role.whole(doc)) return null;
    return (key) => role.embedded.get(key) ?? role.fields.has(key) !== role.others;
  };
}

/**
 * A value cut down to the embedded fields a tree grants, as MongoDB's projection of those paths
 * would: a document keeps the granted fields (cut in turn), an array its documents so cut, and
 * anything else nothing (undefined).
 */
function cutToTree(value: unknown, tree: FieldTree): unknown {
  if (tree.whole) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const item of value) if (isDocument(item) || Array.isArray(item)) out.push(cutToTree(item, tree));
    return out;
  }
  if (!isDocument(value)) return undefined;
  const out: Document = {};
  for (const key of Object.keys(value)) {
    const child = tree.fields[key];
    if (child === undefined) continue;
    const cut = cutToTree(value[key], child);
    if (cut !== undefined) out[key] = cut;
  }
  return out;
}

/** The tree's node a dotted path (past its first field) reaches, array positions passed over; undefined when not granted. */
function nodeAt(tree: FieldTree, keys: string[]): FieldTree | undefined {
  let node: FieldTree | undefined = tree;
  for (const key of keys) {
    if (node.whole) return node;
    if (/^\d+$/.test(key)) continue;
    node = node.fields[key];
    if (node === undefined) return undefined;
  }
  return node;
}

/**
 * Whether a change of a value from `before` to `after` (undefined: absent) writes only embedded
 * fields the tree grants: documents field by field, arrays position by position; any other change
 * of a field granted in part writes all of it, which it does not grant.
 */
function writesWithin(before: unknown, after: unknown, tree: FieldTree): boolean {
  if (tree.whole) return true;
  if (before !== undefined && after !== undefined && idRepr(before) === idRepr(after)) return true;
  if ((before === undefined || isDocument(before)) && (after === undefined || isDocument(after))) {
    const from = (before ?? {}) as Document;
    const to = (after ?? {}) as Document;
    for (const key of new Set([...Object.keys(from), ...Object.keys(to)])) {
      const child = tree.fields[key];
      if (child !== undefined) {
        if (!writesWithin(from[key], to[key], child)) return false;
      } else if (!(key in from && key in to && idRepr(from[key]) === idRepr(to[key]))) {
        return false;
      }
    }
    return true;
  }
  if ((before === undefined || Array.isArray(before)) && (after === undefined || Array.isArray(after))) {
    const from = (before ?? []) as unknown[];
    const to = (after ?? []) as unknown[];
    for (let i = 0; i < Math.max(from.length, to.length); i++) if (!writesWithin(from[i], to[i], tree)) return false;
    return true;
  }
  return false;
}

/** The value at a dotted path of a document (array positions by number), or undefined. */
function valueAt(doc: Document, keys: string[]): unknown {
  let value: unknown = doc;
  for (const key of keys) {
    if (Array.isArray(value) && /^\d+$/.test(key)) value = value[Number(key)];
    else if (isDocument(value)) value = ownField(value, key);
    else return undefined;
  }
  return value;
}

export interface Shaper {
  /** A document as the caller may read it. */
  document(doc: Document): Document;
  /**
   * The value of the field at `path` (dotted) of the document `of` as the caller may read it (cut
   * down to the embedded fields it may read), or undefined when it may read none of it.
   */
  field(of: Document, path: string, value: unknown): unknown;
  /** Whether the caller may read any of the field at `path` of the document `of` (a removed one's). */
  sees(of: Document, path: string): boolean;
}

/**
 * How documents are cut down for a caller (a ReadShape): whole where its role reads it whole, else
 * with the fields the role shows (or without those it hides), a document no role applies to (never
 * returned) keeping nothing; then the filters' projections.
 */
export function shaperOf(shape: ReadShape): Shaper {
  const shown = fieldsOf(shape.roles);
  const project = (doc: Document) => {
    let out = doc;
    for (const projection of shape.projections) out = find([out], {}, { projection })[0] ?? {};
    return out;
  };
  /** The node of the role's field access a path reaches: true (all), a tree (part), or undefined (none). */
  const accessAt = (of: Document, keys: string[]): true | FieldTree | undefined => {
    const keep = shown(of);
    if (keep === null) return true;
    const access = keep(keys[0]!);
    if (access === false) return undefined;
    if (access === true) return true;
    const node = nodeAt(access, keys.slice(1));
    return node === undefined ? undefined : node.whole ? true : node;
  };
  return {
    document(doc) {
      const keep = shown(doc);
      if (keep === null) return project(doc);
      const out: Document = {};
      for (const key of Object.keys(doc)) {
        const access = keep(key);
        if (access === true) out[key] = doc[key];
        else if (access !== false) {
          const cut = cutToTree(doc[key], access);
          if (cut !== undefined) out[key] = cut;
        }
      }
      return project(out);
    },
    field,
    sees(of, path) {
      const access = accessAt(of, path.split("."));
      // (Removed in part: the part it may read went too.)
      if (access === undefined) return false;
      return access !== true || field(of, path, null) !== undefined;
    },
  };
  function field(of: Document, path: string, value: unknown): unknown {
    const keys = path.split(".");
    const access = accessAt(of, keys);
    if (access === undefined) return undefined;
    const readable = access === true ? value : cutToTree(value, access);
    if (readable === undefined || shape.projections.length === 0) return readable;
    // The field alone, projected: shown if it comes out whole.
    let probe: unknown = readable;
    for (const key of [...keys].reverse()) probe = { [key]: probe };
    let found: unknown = project(probe as Document);
    for (const key of keys) found = isDocument(found) ? found[key] : undefined;
    return found !== undefined && idRepr(found) === idRepr(readable) ? readable : undefined;
  }
}

/** `shaperOf(shape).document`, or the document as it is without a shape. */
export function shaper(shape: ReadShape | undefined): (doc: Document) => Document {
  if (!shape) return (doc) => doc;
  const shaped = shaperOf(shape);
  return (doc) => shaped.document(doc);
}

/**
 * On the main thread's slice, a job's own size and each document's: a larger one moves the work to
 * a worker before anything compares, sorts or copies it (a stored document is sized once).
 */
function checkInputs(job: unknown, docs: Document[]): void {
  if (!onMainThreadSlice()) return;
  checkValue(job, "query");
  const limit = mainThreadSlice.valueBytes;
  for (let i = 0; i < docs.length; i++) {
    const doc = docs[i]!;
    const size = keptSize(doc);
    if (size === undefined || size > limit) checkValue(doc, "document");
  }
}

/**
 * How an app user may read a collection its pipeline joins (`$lookup`, `$unionWith`): none of it,
 * or the documents its read rule's filter matches, cut down as its roles let the user read them.
 */
export type JoinedRule = { hidden: true } | { hidden?: undefined; filter?: Document; shape?: ReadShape };

/** The documents a pipeline's joins read of each other collection, as the rules let the caller read them. */
function joinedReader(joined: Record<string, JoinedRule>, others: Record<string, Document[]>) {
  const visible = new Map<string, Document[]>();
  return (other: string): Document[] => {
    let found = visible.get(other);
    if (found === undefined) {
      const rule = joined[other];
      found = others[other] ?? [];
      if (rule?.hidden) found = [];
      else if (rule) {
        if (rule.filter) found = matching(found, rule.filter);
        if (rule.shape) found = found.map(shaper(rule.shape));
      }
      visible.set(other, found);
    }
    return found;
  };
}

/** Answers a read over `docs` (and `others`' documents); the value the action replies. */
export function runRead(job: ReadJob, docs: Document[], others: Record<string, Document[]> = {}): unknown {
  checkInputs(job, docs);
  for (const name of Object.keys(others)) checkInputs(null, others[name]!);
  switch (job.kind) {
    case "find": {
      let found = find(docs, job.query, {
        ...(job.shape ? {} : { projection: job.projection }),
        sort: job.sort,
        limit: job.limit,
      });
      if (job.shape) {
        found = found.map(shaper(job.shape));
        if (Object.keys(job.projection).length > 0) found = projectMatched(found, job.query, job.projection);
      }
      return job.one ? (found[0] ?? null) : found;
    }
    case "count": {
      const n = matching(docs, job.query).length;
      return Long.fromNumber(job.limit === undefined ? n : Math.min(n, job.limit));
    }
    case "aggregate": {
      const collectionResolver = joinedReader(job.joined ?? {}, others);
      // Cut down by the rules before any stage sees them (the rule's filter then comes apart).
      let input = job.filter ? matching(docs, job.filter) : docs;
      if (job.shape) input = input.map(shaper(job.shape));
      // The results may hold stored documents (callers only write them out) and values shared
      // many times: sized, never copied.
      const all = aggregate(input, job.stages, { collectionResolver });
      const results = job.written ? all : all.slice(0, maxResults);
      checkValue(results, "aggregate");
      return results;
    }
    case "project": {
      const [stored] = docs;
      if (!stored) return null;
      const doc = shaper(job.shape)(stored);
      if (Object.keys(job.projection).length === 0) return doc;
      return projectMatched([doc], job.query ?? {}, job.projection)[0] ?? doc;
    }
  }
}

/** Whether a find projection holds a positional path (`"items.$": 1`), which needs the query's match. */
export const isPositionalProjection = (projection: Document): boolean =>
  keysOf(projection).some((key) => key.endsWith(".$"));

/**
 * Documents a query matched, projected; a positional path takes the element the query matched in
 * each (as MongoDB's match details give it). A document cut down by the rules may no longer match
 * a query on fields it lost: its positional path then finds no element, in MongoDB's words.
 */
function projectMatched(docs: Document[], query: Document, projection: Document): Document[] {
  if (!isPositionalProjection(projection)) return find(docs, {}, { projection });
  return docs.map((doc) => find([doc], query, { projection })[0] ?? find([doc], {}, { projection })[0] ?? doc);
}

// ---------------------------------------------------------------------------------------------
// Writes

export interface UpdateOptions {
  many: boolean;
  upsert: boolean;
  replace: boolean;
  sort?: Document;
  /**
   * `$merge`'s result (merge-writes.ts) an update pipeline sees as `$$new` (or through `let`), and
   * that an upsert inserts as it is (MongoDB's `upsertSupplied`).
   */
  supplied?: Document;
  /** Variables of the pipeline, as expressions over `supplied` (`$merge`'s `let`). */
  let?: Document;
}

export type UpdateSpec = Document | Document[];

export interface UpdateJob {
  kind: "update";
  /**
   * The action's query narrowed by the write rule (the query alone when the role writes nothing),
   * and for a `findOneAnd…` by the read rule too.
   */
  all: Document;
  /** The action's own query (an upsert seeds its document from it). */
  query: Document;
  spec: UpdateSpec;
  /** The write rule's filter every changed document must pass (null: none may change, an upsert may insert). */
  writeFilter: Document | null;
  /** The insert rule's filter an upserted document must pass (null: inserts are not allowed). */
  insertFilter: Document | null;
  /** The fields of a document its role lets the caller write, when some roles write some fields only. */
  writeCuts?: FieldCut[];
  /** The same for the document an upsert inserts. */
  insertCuts?: FieldCut[];
  arrayFilters?: Document[];
  options: UpdateOptions;
}

/** What an update changes, decided over the documents read: all of it, or (an error) none. */
export type UpdateDecision =
  | { kind: "upsert"; doc: Document }
  /** `index`: the changed document's place among the documents read. */
  | { kind: "update"; matched: number; changes: DocumentUpdate[] };

/**
 * One document's change: `index` is its place among the documents read; `paths` the paths set or
 * removed, `["*"]` when it is written whole (a replacement, or a pipeline's change MongoDB writes
 * so), `[]` when nothing changed; `truncated` the arrays a pipeline made shorter.
 */
export interface DocumentUpdate {
  index: number;
  after: Document;
  paths: string[];
  truncated?: { field: string; newSize: number }[];
}

export interface DeleteJob {
  kind: "delete";
  all: Document;
  sort?: Document;
  many: boolean;
}

export type WriteJob = UpdateJob | DeleteJob;

/** Whether a member of `$all` is an equality (not a pattern, not `{$elemMatch: …}`). */
const isAllEquality = (member: unknown) =>
  !isRegexValue(member) && !(isDocument(member) && Object.keys(member).some((k) => k.startsWith("$")));

/** The paths a query pins with equality (`a: v`, `a: {$eq: v}`, `a: {$in: [v]}`, `a: {$all: [v]}`, through `$and`). */
function equalities(query: Document, found: Map<string, unknown>): void {
  for (const [key, value] of Object.entries(query)) {
    if ((key === "$and" || key === "$or") && Array.isArray(value)) {
      // A one-clause `$or` pins like `$and`; a real disjunction pins nothing.
      if (key === "$and" || value.length === 1) for (const q of value) if (isDocument(q)) equalities(q, found);
      continue;
    }
    if (key.startsWith("$")) continue;
    let pinned: unknown = value;
    if (isRegexValue(value)) continue;
    if (isDocument(value) && Object.keys(value).some((k) => k.startsWith("$"))) {
      if ("$eq" in value) pinned = value.$eq;
      else if (Array.isArray(value.$in) && value.$in.length === 1 && !isRegexValue(value.$in[0])) pinned = value.$in[0];
      else if (Array.isArray(value.$all) && value.$all.length > 0 && value.$all.every(isAllEquality)) {
        // `$all` is an `$and` of equalities (MongoDB parses it so): one pins, two pin one path twice.
        if (value.$all.length > 1)
          throw errors.mongo(`cannot infer query fields to set, path '${key}' is matched twice`);
        pinned = value.$all[0];
      } else continue;
    }
    if (found.has(key)) throw errors.mongo(`cannot infer query fields to set, path '${key}' is matched twice`);
    found.set(key, pinned);
  }
}

/** An upsert's starting document: the query's equality fields, dotted paths as nested documents. */
function seedFromQuery(query: Document): Document {
  const found = new Map<string, unknown>();
  equalities(query, found);
  const paths = [...found.keys()];
  for (const a of paths) {
    for (const b of paths) {
      if (b.startsWith(`${a}.`))
        throw errors.mongo(`cannot infer query fields to set, both paths '${a}' and '${b}' are matched`);
    }
  }
  const seed: Document = {};
  for (const [path, value] of found) {
    const forbidden = forbiddenPath(path);
    if (forbidden !== null) throw errors.mongo(forbidden);
    const keys = path.split(".");
    let node = seed;
    for (const key of keys.slice(0, -1)) {
      if (!isDocument(ownField(node, key))) setOwnField(node, key, {});
      node = ownField(node, key) as Document;
    }
    setOwnField(node, keys.at(-1)!, cloneValue(value));
  }
  return seed;
}

interface Applied {
  doc: Document;
  modifiedPaths: string[];
  truncated?: { field: string; newSize: number }[];
}

/** Applies an operator update, an aggregation-pipeline update, or (replace) a replacement. */
function applyTo(
  original: Document,
  spec: UpdateSpec,
  context: UpdateContext & { variables?: Document },
  upsertInsert: boolean,
): Applied {
  if (Array.isArray(spec)) {
    const variables = context.variables;
    const [result] = aggregate([cloneValue(original)], spec, variables ? { variables } : {});
    let doc = (result ?? {}) as Document;
    if (original._id !== undefined) {
      // A pipeline that leaves `_id` out keeps it; one that changes it is refused.
      if (doc._id === undefined) doc = { _id: original._id, ...doc };
      else if (idRepr(doc._id) !== idRepr(original._id))
        throw errors.mongo(
          `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${shellText(doc._id)}`,
        );
    }
    doc = idFirst(doc);
    if (upsertInsert) return { doc, modifiedPaths: Object.keys(doc) };
    const delta = pipelineDelta(original, doc);
    if (delta === null) return { doc, modifiedPaths: ["*"] };
    return { doc, modifiedPaths: delta.paths, truncated: delta.truncated };
  }
  const { $setOnInsert, ...rest } = spec as Document & { $setOnInsert?: Document };
  const operators: Document = { ...rest };
  if (upsertInsert && isDocument($setOnInsert)) {
    operators.$set = { ...(isDocument(operators.$set) ? operators.$set : {}), ...$setOnInsert };
  }
  const doc = cloneValue(original);
  // An upsert may set the new document's `_id` when the query pins none (mingo refuses any `_id`
  // in `$set`); one equal to the pinned `_id` changes nothing.
  if (upsertInsert && isDocument(operators.$set) && "_id" in operators.$set) {
    const { _id, ...others } = operators.$set;
    if (doc._id === undefined) doc._id = cloneValue(_id);
    else if (idRepr(doc._id) !== idRepr(_id))
      throw errors.mongo("Performing an update on the path '_id' would modify the immutable field '_id'");
    if (Object.keys(others).length > 0) operators.$set = others;
    else delete operators.$set;
  }
  const modifiedPaths = Object.keys(operators).length === 0 ? [] : applyUpdate(doc, operators, context);
  return { doc, modifiedPaths };
}

/**
 * MongoDB refuses a document past 16 MiB; measured through shared parts once each, so an update
 * that nests a value in itself is refused before anything copies or writes it.
 */
function checkDocumentSize(doc: Document): void {
  const size = logicalSize(doc, maxBsonObjectSize);
  if (size > maxBsonObjectSize) throw errors.updateTooLarge();
}

/** The indices of `docs` an update or delete targets: the matches, sorted, all or the first. */
function targets(docs: Document[], query: Document, sort: Document | undefined, many: boolean): number[] {
  const q = Object.keys(query).length === 0 ? null : compileQuery(query);
  const places = new Map<Document, number>();
  const matched: Document[] = [];
  docs.forEach((d, i) => {
    if (q === null || q.test(d)) {
      matched.push(d);
      places.set(d, i);
    }
  });
  let ordered = matched;
  if (sort && Object.keys(sort).length > 0 && matched.length > 1) ordered = find(matched, {}, { sort });
  return (many ? ordered : ordered.slice(0, 1)).map((d) => places.get(d)!);
}

/** The variables an update pipeline of `$merge` sees: `let`'s over its result, else `new`, the result. */
function pipelineVariables(options: UpdateOptions): { variables?: Document } {
  const supplied = options.supplied;
  if (supplied === undefined) return {};
  if (options.let === undefined) return { variables: { new: supplied } };
  // (An expression object's fields are expressions: each variable's value over the result.)
  const [evaluated] = aggregate([supplied], [{ $replaceWith: { values: options.let } }]);
  return { variables: (evaluated?.values ?? {}) as Document };
}

/** Decides an update over the documents it read (all or nothing: a refusal writes none). */
export function decideUpdate(job: UpdateJob, docs: Document[]): UpdateDecision {
  const { options, spec, arrayFilters } = job;
  // Refused whether or not anything matches, wherever the job runs.
  if (Array.isArray(spec)) {
    if (arrayFilters !== undefined) throw errors.mongo("arrayFilters may not be specified for pipeline-style updates");
    checkUpdatePipeline(spec);
  }
  const chosen = targets(docs, job.all, options.sort, options.many);
  if (chosen.length === 0) {
    if (!options.upsert) return { kind: "update", matched: 0, changes: [] };
    // MongoDB's upsert: the query's equality fields seed the new document (a replacement takes
    // only its `_id`), then the update applies; `_id` pinned by the query cannot change.
    const seed = seedFromQuery(job.query);
    let doc: Document;
    if (options.supplied !== undefined) {
      doc = cloneValue(options.supplied);
    } else if (options.replace) {
      const replacement = cloneValue(spec as Document);
      if (seed._id !== undefined && replacement._id !== undefined && idRepr(replacement._id) !== idRepr(seed._id)) {
        throw errors.mongo(
          `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${shellText(replacement._id)}`,
        );
      }
      doc = { ...(seed._id !== undefined ? { _id: seed._id } : {}), ...replacement };
    } else {
      doc = applyTo(seed, spec, { query: job.query, arrayFilters }, true).doc;
      if (seed._id !== undefined && idRepr(doc._id) !== idRepr(seed._id))
        throw errors.mongo("Performing an update on the path '_id' would modify the immutable field '_id'");
    }
    const refusal = idRefusal(doc);
    if (refusal !== null) throw errors.mongo(refusal);
    // (An `_id` the server adds is not one the caller writes.)
    const written = Object.keys(doc);
    doc = doc._id === undefined ? { _id: newDocumentId(), ...doc } : idFirst(doc);
    checkDocumentSize(doc);
    if (job.insertFilter === null || !passes(job.insertFilter, doc)) throw errors.mongo("insert not permitted");
    if (job.insertCuts && !insertsOnly(fieldsOf(job.insertCuts)(doc), doc, written))
      throw errors.mongo("insert not permitted");
    return { kind: "upsert", doc };
  }
  if (job.writeFilter === null) throw errors.mongo("update not permitted");
  const writeFilter = job.writeFilter;
  const changes: DocumentUpdate[] = [];
  let writable: ((doc: Document) => boolean) | undefined;
  const writableFields = job.writeCuts ? fieldsOf(job.writeCuts) : undefined;
  for (const index of chosen) {
    const current = docs[index]!;
    let after: Document;
    let paths: string[];
    let truncated: DocumentUpdate["truncated"];
    if (options.replace) {
      after = { _id: current._id, ...cloneValue(spec as Document) };
      const given = (spec as Document)._id;
      if (given !== undefined && idRepr(given) !== idRepr(current._id)) {
        throw errors.mongo(
          `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${shellText(given)}`,
        );
      }
      after._id = current._id;
      // MongoDB writes nothing for a replacement equal to the document, field order included
      // (not modified, no change event).
      paths = toEJSONText(after) === toEJSONText(current) ? [] : ["*"];
    } else {
      ({
        doc: after,
        modifiedPaths: paths,
        truncated,
      } = applyTo(current, spec, { query: job.query, arrayFilters, ...pipelineVariables(options) }, false));
      if (idRepr(after._id) !== idRepr(current._id)) {
        throw errors.mongo("Performing an update on the path '_id' would modify the immutable field '_id'");
      }
    }
    checkDocumentSize(after);
    // The rules hold after the change too: a user cannot write a document out of their reach.
    writable ??= passesFor(writeFilter);
    if (!writable(after)) throw errors.mongo("update not permitted");
    // A role that writes some fields only: the change must set or remove no other.
    const cut = truncated?.map(({ field }) => field) ?? [];
    if (writableFields && !updatesOnly(writableFields(current), current, after, [...paths, ...cut])) {
      throw errors.mongo("update not permitted");
    }
    changes.push(truncated?.length ? { index, after, paths, truncated } : { index, after, paths });
  }
  return { kind: "update", matched: chosen.length, changes };
}

/**
 * Whether a new document's fields (`keys`) are all among those its role writes (null: it writes
 * documents whole); a field granted in part holds only embedded fields the role writes.
 */
export function insertsOnly(writable: ((key: string) => FieldAccess) | null, doc: Document, keys: string[]): boolean {
  if (writable === null) return true;
  for (const key of keys) {
    const access = writable(key);
    if (access === false || (access !== true && !writesWithin(undefined, doc[key], access))) return false;
  }
  return true;
}

/**
 * Whether an update from `before` to `after` (its modified paths, or `*` for a replacement)
 * changed only fields its role writes (null: it writes documents whole); a field granted in part,
 * only embedded fields the role writes.
 */
function updatesOnly(
  writable: ((key: string) => FieldAccess) | null,
  before: Document,
  after: Document,
  paths: string[],
): boolean {
  if (writable === null) return true;
  if (paths.includes("*")) {
    for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
      if (key in before && key in after && idRepr(before[key]) === idRepr(after[key])) continue;
      const access = writable(key);
      if (access === false || (access !== true && !writesWithin(before[key], after[key], access))) return false;
    }
    return true;
  }
  for (const path of paths) {
    const keys = path.split(".");
    const access = writable(keys[0]!);
    if (access === true) continue;
    if (access === false) return false;
    const node = nodeAt(access, keys.slice(1));
    if (node === undefined || !writesWithin(valueAt(before, keys), valueAt(after, keys), node)) return false;
  }
  return true;
}

/** The indices of the documents a delete removes. */
export function decideDelete(job: DeleteJob, docs: Document[]): number[] {
  return targets(docs, job.all, job.sort, job.many);
}

export function runWrite(job: WriteJob, docs: Document[]): UpdateDecision | number[] {
  checkInputs(job, docs);
  return job.kind === "update" ? decideUpdate(job, docs) : decideDelete(job, docs);
}

// ---------------------------------------------------------------------------------------------
// Stream filters

/** A change stream's filter and the read rule's, over one change event and the document it is about. */
export interface MatchJob {
  kind: "match";
  filter: Document | null;
  readFilter: Document | null;
}

/** Whether a change passes the read rule (over `doc`) and the stream's filter (over `event`). */
export function runMatch(job: MatchJob, event: Document, doc: Document | undefined): boolean {
  checkInputs(job, doc ? [event, doc] : [event]);
  if (job.readFilter) {
    if (!doc || !passes(job.readFilter, doc)) return false;
  }
  return job.filter ? passes(job.filter, event) : true;
}
