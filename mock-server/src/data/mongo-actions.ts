/**
 * The `mongodb-atlas` service actions (`find`, `insertOne`, `aggregate`, …) with the argument
 * shapes the SDKs send and the result types the service answers (`count` as Int64, matched /
 * modified / deleted counts as Int32). Query, update and aggregation semantics are mingo's.
 *
 * Each action reads what it needs from the app's document store (the query, narrowed by the rule,
 * goes along so a store can fetch less: store/postgres/pushdown.ts), decides synchronously under
 * the query limits, and writes through one atomic `write` of the store.
 */
import { Int32, Long, ObjectId } from "bson";
import { type AppConfig, defaultDocsExaminedLimit } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import {
  type AppliedChanges,
  type DocumentChange,
  type DocumentStore,
  QuotaExceededError,
  type ScanOptions,
  StoreTimeoutError,
  type WritePlan,
  WriteRateExceededError,
  type WriteView,
} from "../store/store.ts";
import {
  allMatches,
  bestMatches,
  bounded,
  countMatches,
  firstMatches,
  type Matcher,
  type ReadBudget,
} from "./bounded-reads.ts";
import { checkUpdateSize, documentTooLarge } from "./document-size.ts";
import { type ChangeEvent, cloneValue, type Document, idRepr, isDocument } from "./documents.ts";
import { type MongoAction, mongoActions } from "./mongo-action-names.ts";
import { namespaceError } from "./namespaces.ts";
import { aggregate, applyUpdate, compileQuery, find } from "./query-engine.ts";
import { type QueryLimits, queryLimitsOf, withQueryLimits } from "./query-limits.ts";
import { isRegexValue } from "./regex.ts";
import { narrow, type Principal, Rules, writerOf } from "./rules.ts";
import { Turns } from "./turns.ts";

export const mongoServiceName = "mongodb-atlas";
export const maxResults = 50_000;

export { type MongoAction, mongoActions };

export function isMongoAction(name: string): name is MongoAction {
  return (mongoActions as readonly string[]).includes(name);
}

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

function mongoError(error: unknown): never {
  if ((error as { errorCode?: string }).errorCode) throw error;
  if (error instanceof RangeError && /call stack/i.test(error.message))
    throw errors.mongo("the query or document is nested too deeply");
  throw errors.mongo(mongoMessage(error instanceof Error ? error.message : String(error)));
}

function requireString(args: Document, field: string): string {
  const value = args[field];
  if (typeof value !== "string" || value === "") throw errors.requiredString(field);
  return value;
}

function optionalDocument(args: Document, field: string): Document {
  const value = args[field];
  if (value === undefined || value === null) return {};
  if (!isDocument(value)) throw errors.mongo(`'${field}' must be a document`);
  return value;
}

function optionalLimit(args: Document): number | undefined {
  const value = args.limit;
  if (value === undefined || value === null) return undefined;
  const n = typeof value === "number" ? value : value instanceof Long ? value.toNumber() : Number.NaN;
  if (!Number.isInteger(n)) throw errors.mongo("'limit' must be an integer");
  return n === 0 ? undefined : Math.abs(n);
}

const updateOperators = new Set([
  "$set",
  "$unset",
  "$inc",
  "$mul",
  "$rename",
  "$min",
  "$max",
  "$currentDate",
  "$addToSet",
  "$pop",
  "$pull",
  "$push",
  "$pullAll",
  "$bit",
  "$setOnInsert",
]);
const pipelineUpdateStages = new Set(["$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"]);

/** The server refuses an unknown update operator even when nothing matches. */
function checkUpdate(spec: Document | Document[]): void {
  if (Array.isArray(spec)) {
    for (const stage of spec) {
      const op = Object.keys(stage)[0] ?? "";
      if (!pipelineUpdateStages.has(op)) throw errors.mongo(`Unrecognized pipeline stage name: '${op}'.`);
    }
    return;
  }
  for (const key of Object.keys(spec)) {
    if (key.startsWith("$") && !updateOperators.has(key)) throw errors.mongo(`Unknown modifier: ${key}`);
  }
}

function hasOperators(update: Document): boolean {
  return Object.keys(update).some((k) => k.startsWith("$"));
}

/** The paths a query pins with equality (`a: v`, `a: {$eq: v}`, `a: {$in: [v]}`, through `$and`). */
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
      else continue;
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
    const keys = path.split(".");
    let node = seed;
    for (const key of keys.slice(0, -1)) {
      if (!isDocument(node[key])) node[key] = {};
      node = node[key] as Document;
    }
    node[keys.at(-1)!] = cloneValue(value);
  }
  return seed;
}

type UpdateSpec = Document | Document[];

interface Applied {
  doc: Document;
  modifiedPaths: string[];
}

/** Applies an operator update, an aggregation-pipeline update, or (replace) a replacement. */
function applyTo(
  original: Document,
  spec: UpdateSpec,
  arrayFilters: Document[] | undefined,
  upsertInsert: boolean,
): Applied {
  if (Array.isArray(spec)) {
    const [result] = aggregate([cloneValue(original)], spec);
    const doc = (result ?? {}) as Document;
    if (original._id !== undefined) doc._id = original._id;
    return { doc, modifiedPaths: Object.keys(doc) };
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
  const modifiedPaths = Object.keys(operators).length === 0 ? [] : applyUpdate(doc, operators, arrayFilters);
  return { doc, modifiedPaths };
}

/** What an action needs of its app: the settings (rules, limits) and the documents. */
export interface MongoApp {
  readonly config: AppConfig;
  readonly data: DocumentStore;
}

/** The collections a pipeline reads besides its own (`$lookup`, `$graphLookup`, `$unionWith`, nested too). */
export function referencedCollections(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) referencedCollections(item, found);
    return found;
  }
  if (!isDocument(node)) return found;
  for (const [key, value] of Object.entries(node)) {
    if ((key === "$lookup" || key === "$graphLookup") && isDocument(value) && typeof value.from === "string")
      found.add(value.from);
    if (key === "$unionWith") {
      if (typeof value === "string") found.add(value);
      else if (isDocument(value) && typeof value.coll === "string") found.add(value.coll);
    }
    referencedCollections(value, found);
  }
  return found;
}

interface UpdateOptions {
  many: boolean;
  upsert: boolean;
  arrayFilters: unknown;
  replace: boolean;
  sort?: Document;
}

interface UpdateResult {
  matched: number;
  modified: number;
  upsertedId?: unknown;
  before?: Document;
  after?: Document;
}

export class MongoService {
  private readonly rules: Rules;
  private readonly limits: QueryLimits;
  /** Every synchronous part of one action runs before this moment (performance.now()). */
  private deadline = 0;
  /** What the action may still read (its deadline, the documents it may examine). */
  private budget: ReadBudget = { deadline: 0, maxExamined: 0, examined: 0 };

  constructor(
    private readonly app: MongoApp,
    private readonly principal: Principal,
  ) {
    this.rules = new Rules(app.config);
    this.limits = queryLimitsOf(app.config);
  }

  /**
   * A write through the store, as the caller (its documents count against its limits); one past
   * the app's limits or the caller's answers the documented error of that limit.
   */
  private async write<T>(database: string, name: string, plan: (view: WriteView) => Promise<WritePlan<T>>): Promise<T> {
    const writer = writerOf(this.principal);
    try {
      return await this.app.data.write(database, name, plan, writer);
    } catch (error) {
      if (error instanceof QuotaExceededError) throw errors.quotaExceeded(error.quota, error.limit);
      if (error instanceof WriteRateExceededError) throw errors.tooManyWrites(error.limit, writer?.anonymous ?? false);
      throw error;
    }
  }

  /** Runs a synchronous part of the action under the query limits (docs/decisions/0006-query-limits.md). */
  private limited<T>(fn: () => T): T {
    try {
      return withQueryLimits(this.limits, fn, this.deadline);
    } catch (error) {
      mongoError(error);
    }
  }

  private matching(docs: Document[], query: Document): Document[] {
    if (Object.keys(query).length === 0) return docs;
    const q = compileQuery(query);
    return docs.filter((d) => q.test(d));
  }

  // -------------------------------------------------------------------------------------------
  // Reads bounded in time and documents (bounded-reads.ts, docs/decisions/0018-fair-shares.md)

  /** A read of the store (or of a write's view), checked against the action's budget between batches. */
  private scan(reader: Reader, prefilter: Document, options: { want?: number }): AsyncIterable<Document[]> {
    const max = this.budget.maxExamined - this.budget.examined;
    return bounded(reader(prefilter, { ...options, max, deadline: this.budget.deadline }), this.budget);
  }

  /** What a collection's documents are read through: the store, or a write's view. */
  private reader(database: string, name: string, view?: WriteView): Reader {
    if (view) return (prefilter, options) => view.scan(prefilter, options);
    return (prefilter, options) => this.app.data.scan(database, name, prefilter, options);
  }

  private matcher(query: Document): Matcher {
    return (docs) => this.limited(() => this.matching(docs, query));
  }

  /**
   * The documents matching `query` an action needs: with a sort, the best `want` (all without one;
   * the caller sorts them); without, the first `want` in natural order (all without one), reading
   * no further.
   */
  private matches(reader: Reader, query: Document, sort: Document, want: number | undefined): Promise<Document[]> {
    const sorted = Object.keys(sort).length > 0;
    const batches = this.scan(reader, query, sorted || want === undefined ? {} : { want });
    const match = this.matcher(query);
    if (want === undefined) return allMatches(batches, match);
    if (!sorted) return firstMatches(batches, match, want);
    return bestMatches(batches, match, want, (docs, n) => this.limited(() => find(docs, {}, { sort, limit: n })));
  }

  /** Checks a query the way the server does, even when there is nothing to run it on. */
  private checkQuery(query: Document): void {
    if (Object.keys(query).length === 0) return;
    this.limited(() => compileQuery(query));
  }

  /**
   * Runs one action: reads, then decides under the query limits (a deadline for the whole action
   * and a memory ceiling), then writes. Found documents may be the stored objects themselves
   * (writes replace a stored document, never change it): callers write the result out as text and
   * never change it.
   */
  async run(action: MongoAction, args: Document): Promise<unknown> {
    try {
      return await this.runAction(action, args);
    } catch (error) {
      // A database statement past its time (or cancelled at the deadline) is the action's.
      if (error instanceof StoreTimeoutError) throw errors.queryTimeLimit();
      throw error;
    }
  }

  private async runAction(action: MongoAction, args: Document): Promise<unknown> {
    this.deadline = performance.now() + this.limits.timeoutMs;
    this.budget = { deadline: this.deadline, maxExamined: docsExaminedLimitOf(this.app.config), examined: 0 };
    const database = requireString(args, "database");
    const name = requireString(args, "collection");
    const invalid = namespaceError(database, name);
    if (invalid !== undefined) throw errors.mongo(invalid);
    switch (action) {
      case "find":
        return this.find(database, name, args);
      case "findOne":
        return (await this.find(database, name, { ...args, limit: 1 }))[0] ?? null;
      case "count": {
        const query = optionalDocument(args, "query");
        this.checkQuery(query);
        const filter = this.rules.read(this.principal, database, name);
        if (filter === null) return Long.fromNumber(0);
        const all = narrow(query, filter);
        const limit = optionalLimit(args);
        // Counted by the store when it evaluates the query exactly; else read and matched, bounded.
        const n =
          (await this.app.data.countExact(database, name, all, { limit, deadline: this.budget.deadline })) ??
          (await countMatches(this.scan(this.reader(database, name), all, {}), this.matcher(all), limit));
        return Long.fromNumber(n);
      }
      case "aggregate":
        return this.aggregate(database, name, args);
      case "insertOne": {
        const document = args.document;
        if (!isDocument(document)) throw errors.mongo("'document' must be a document");
        const [id] = await this.insert(database, name, [document]);
        return { insertedId: id };
      }
      case "insertMany": {
        const documents = args.documents;
        if (!Array.isArray(documents)) throw errors.mongo("'documents' must be an array");
        if (documents.length === 0) throw errors.mongo("must provide at least one element");
        if (!documents.every(isDocument)) throw errors.mongo("'documents' must only contain documents");
        return { insertedIds: await this.insert(database, name, documents as Document[]) };
      }
      case "updateOne":
      case "updateMany": {
        const result = await this.update(database, name, optionalDocument(args, "query"), args.update, {
          many: action === "updateMany",
          upsert: args.upsert === true,
          arrayFilters: args.arrayFilters,
          replace: false,
        });
        return {
          matchedCount: new Int32(result.matched),
          modifiedCount: new Int32(result.modified),
          ...(result.upsertedId !== undefined ? { upsertedId: result.upsertedId } : {}),
        };
      }
      case "deleteOne":
      case "deleteMany": {
        const deleted = await this.delete(
          database,
          name,
          optionalDocument(args, "query"),
          action === "deleteMany",
          undefined,
        );
        return { deletedCount: new Int32(deleted.length) };
      }
      case "findOneAndUpdate":
      case "findOneAndReplace": {
        const replace = action === "findOneAndReplace";
        // realm-web 2.0.1 sends findOneAndDelete as findOneAndReplace without `update`: the service
        // then replaces the match with an empty document (only `_id` is left), and so do we.
        const spec = replace && args.update === undefined ? {} : args.update;
        const result = await this.update(database, name, optionalDocument(args, "filter"), spec, {
          many: false,
          upsert: args.upsert === true,
          arrayFilters: undefined,
          replace,
          sort: optionalDocument(args, "sort"),
        });
        const doc = args.returnNewDocument === true ? result.after : result.before;
        return doc ? this.project(doc, optionalDocument(args, "projection")) : null;
      }
      case "findOneAndDelete": {
        const [doc] = await this.delete(
          database,
          name,
          optionalDocument(args, "filter"),
          false,
          optionalDocument(args, "sort"),
        );
        return doc ? this.project(doc, optionalDocument(args, "projection")) : null;
      }
    }
  }

  private project(doc: Document, projection: Document): Document {
    if (Object.keys(projection).length === 0) return doc;
    return this.limited(() => find([doc], {}, { projection })[0] ?? doc);
  }

  private async find(database: string, name: string, args: Document): Promise<Document[]> {
    this.checkQuery(optionalDocument(args, "query"));
    const filter = this.rules.read(this.principal, database, name);
    if (filter === null) return [];
    const query = narrow(optionalDocument(args, "query"), filter);
    const projection = optionalDocument(args, "project");
    const sort = optionalDocument(args, "sort");
    const limit = Math.min(optionalLimit(args) ?? maxResults, maxResults);
    const docs = await this.matches(this.reader(database, name), query, sort, limit);
    return this.limited(() => find(docs, {}, { projection, sort, limit }));
  }

  private async aggregate(database: string, name: string, args: Document): Promise<Document[]> {
    const pipeline = args.pipeline;
    if (!Array.isArray(pipeline) || !pipeline.every(isDocument))
      throw errors.mongo("'pipeline' must be an array of stages");
    for (const stage of pipeline as Document[]) {
      const op = Object.keys(stage)[0];
      if (op === "$out" || op === "$merge") throw errors.mongo(`${op} is not allowed in this context`);
    }
    const filter = this.rules.read(this.principal, database, name);
    if (filter === null) return [];
    const stages =
      Object.keys(filter).length > 0 ? [{ $match: filter }, ...(pipeline as Document[])] : (pipeline as Document[]);
    // A leading $match narrows what the store fetches, like the rule's filter; a $sort, $skip and
    // $limit after it, how many of those documents the pipeline can use.
    const first = pipeline[0] as Document | undefined;
    const leading = isDocument(first?.$match) ? first.$match : {};
    const head = pipelineHead(pipeline as Document[]);
    const docs = await this.matches(this.reader(database, name), narrow(leading, filter), head.sort, head.want);
    // The other collections the pipeline reads, each as its read rule lets the caller see it.
    const others = new Map<string, Document[]>();
    for (const other of referencedCollections(pipeline)) {
      const otherFilter = this.rules.read(this.principal, database, other);
      if (otherFilter === null) continue;
      others.set(other, await this.matches(this.reader(database, other), otherFilter, {}, undefined));
    }
    return this.limited(() => {
      const collectionResolver = (other: string): Document[] => others.get(other) ?? [];
      const out = aggregate(docs, stages, { collectionResolver });
      return out.slice(0, maxResults).map((d) => cloneValue(d as Document));
    });
  }

  private async insert(database: string, name: string, documents: Document[]): Promise<unknown[]> {
    const allowed = this.rules.insert(this.principal, database, name);
    // Prepared before the write, in slices (an insertMany of many documents lets other requests
    // run meanwhile): each document is this action's own copy from here on.
    const docs: Document[] = [];
    let refused: unknown = null;
    const turns = new Turns();
    for (let from = 0; from < documents.length && !refused; from += 256) {
      this.limited(() => {
        for (const original of documents.slice(from, from + 256)) {
          const doc = cloneValue(original);
          if (doc._id === undefined) doc._id = new ObjectId();
          // MongoDB's ordered insert: the documents before a refused one stay inserted.
          refused = documentTooLarge(doc);
          if (refused) break;
          if (allowed === null || !this.test(allowed, doc)) {
            refused = errors.mongo("insert not permitted");
            break;
          }
          docs.push(doc);
        }
      });
      await turns.maybe();
    }
    const outcome = await this.write(database, name, async () => {
      const plan: WritePlan<{ applied: AppliedChanges }> = {
        changes: docs.map((doc) => ({ op: "insert", doc })),
        // (The documents are this action's copies, changed by no one: the events share them.)
        events: (applied) =>
          docs.slice(0, applied.applied).map((doc) => ({
            database,
            collection: name,
            operationType: "insert" as const,
            documentKey: { _id: doc._id },
            fullDocument: doc,
          })),
        result: (applied) => ({ applied }),
      };
      return plan;
    });
    const { applied } = outcome;
    if (applied.duplicateAt !== undefined) {
      const doc = docs[applied.duplicateAt]!;
      throw errors.mongo(
        `Duplicate key error collection: ${database}.${name} index: _id_ dup key: { _id: ${idRepr(doc._id)} }`,
      );
    }
    if (refused) throw refused;
    return docs.map((d) => d._id);
  }

  private test(filter: Document, doc: Document): boolean {
    if (Object.keys(filter).length === 0) return true;
    return compileQuery(filter).test(doc);
  }

  private targets(docs: Document[], query: Document, sort: Document | undefined, many: boolean): Document[] {
    let matched = this.matching(docs, query);
    if (sort && Object.keys(sort).length > 0 && matched.length > 1) matched = find(matched, {}, { sort });
    return many ? matched : matched.slice(0, 1);
  }

  private async update(
    database: string,
    name: string,
    query: Document,
    spec: unknown,
    options: UpdateOptions,
  ): Promise<UpdateResult> {
    if (!isDocument(spec) && !(Array.isArray(spec) && spec.every(isDocument)))
      throw errors.mongo("'update' must be a document");
    if (options.replace) {
      if (!isDocument(spec) || hasOperators(spec))
        throw errors.mongo("the replace operation document must not contain atomic operators");
    } else if (isDocument(spec) && !hasOperators(spec)) {
      throw errors.mongo("Update document requires atomic operators");
    } else {
      checkUpdate(spec as Document | Document[]);
    }
    const arrayFilters = Array.isArray(options.arrayFilters) ? (options.arrayFilters as Document[]) : undefined;
    const writeFilter = this.rules.write(this.principal, database, name);
    if (writeFilter === null) throw errors.mongo("update not permitted");
    this.checkQuery(query);
    const all = narrow(query, writeFilter);
    const outcome = await this.write(database, name, async (view) => {
      const docs = await this.matches(
        this.reader(database, name, view),
        all,
        options.sort ?? {},
        options.many ? undefined : 1,
      );
      return this.limited(() =>
        this.planUpdate(database, name, docs, all, query, spec as UpdateSpec, writeFilter, arrayFilters, options),
      );
    });
    if (outcome.duplicate !== undefined) {
      throw errors.mongo(
        `Duplicate key error collection: ${database}.${name} index: _id_ dup key: { _id: ${idRepr(outcome.duplicate)} }`,
      );
    }
    return outcome.result;
  }

  /** What an update changes, decided over the documents it read (all or nothing: a refusal writes none). */
  private planUpdate(
    database: string,
    name: string,
    docs: Document[],
    all: Document,
    query: Document,
    spec: UpdateSpec,
    writeFilter: Document,
    arrayFilters: Document[] | undefined,
    options: UpdateOptions,
  ): WritePlan<{ result: UpdateResult; duplicate?: unknown }> {
    const targets = this.targets(docs, all, options.sort, options.many);
    if (targets.length === 0) {
      if (!options.upsert) return nothing({ result: { matched: 0, modified: 0 } });
      // MongoDB's upsert: the query's equality fields seed the new document (a replacement takes
      // only its `_id`), then the update applies; `_id` pinned by the query cannot change.
      const seed = seedFromQuery(query);
      let doc: Document;
      if (options.replace) {
        const replacement = cloneValue(spec as Document);
        if (seed._id !== undefined && replacement._id !== undefined && idRepr(replacement._id) !== idRepr(seed._id)) {
          throw errors.mongo(
            `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${idRepr(replacement._id)}`,
          );
        }
        doc = { ...(seed._id !== undefined ? { _id: seed._id } : {}), ...replacement };
      } else {
        doc = applyTo(seed, spec, arrayFilters, true).doc;
        if (seed._id !== undefined && idRepr(doc._id) !== idRepr(seed._id))
          throw errors.mongo("Performing an update on the path '_id' would modify the immutable field '_id'");
      }
      if (doc._id === undefined) doc = { _id: new ObjectId(), ...doc };
      checkUpdateSize(doc);
      const allowed = this.rules.insert(this.principal, database, name);
      if (allowed === null || !this.test(allowed, doc)) throw errors.mongo("insert not permitted");
      const inserted = doc;
      return {
        changes: [{ op: "insert", doc: inserted }],
        events: (applied) =>
          applied.applied === 1
            ? [
                {
                  database,
                  collection: name,
                  operationType: "insert",
                  documentKey: { _id: inserted._id },
                  fullDocument: cloneValue(inserted),
                },
              ]
            : [],
        result: (applied) =>
          applied.duplicateAt !== undefined
            ? { result: { matched: 0, modified: 0 }, duplicate: inserted._id }
            : {
                result: { matched: 0, modified: 0, upsertedId: inserted._id, after: cloneValue(inserted) },
              },
      };
    }

    const results: { before: Document; after: Document; paths: string[] }[] = [];
    for (const current of targets) {
      let after: Document;
      let paths: string[];
      if (options.replace) {
        after = { _id: current._id, ...cloneValue(spec as Document) };
        if ((spec as Document)._id !== undefined && String((spec as Document)._id) !== String(current._id)) {
          throw errors.mongo("After applying the update, the (immutable) field '_id' was found to have been altered");
        }
        after._id = current._id;
        paths = ["*"];
      } else {
        ({ doc: after, modifiedPaths: paths } = applyTo(current, spec, arrayFilters, false));
        if (idRepr(after._id) !== idRepr(current._id)) {
          throw errors.mongo("Performing an update on the path '_id' would modify the immutable field '_id'");
        }
      }
      // The rules hold after the change too: a user cannot write a document out of their reach.
      if (!this.test(writeFilter, after)) throw errors.mongo("update not permitted");
      if (paths.length > 0) checkUpdateSize(after);
      results.push({ before: cloneValue(current), after, paths });
    }
    const changes: DocumentChange[] = [];
    const events: ChangeEvent[] = [];
    for (const { after, paths } of results) {
      if (paths.length === 0) continue;
      changes.push({ op: "replace", doc: after });
      if (options.replace) {
        events.push({
          database,
          collection: name,
          operationType: "replace",
          documentKey: { _id: after._id },
          fullDocument: cloneValue(after),
        });
        continue;
      }
      const updatedFields: Document = {};
      const removedFields: string[] = [];
      for (const path of paths) {
        const value = path
          .split(".")
          .reduce<unknown>((v, k) => (isDocument(v) || Array.isArray(v) ? (v as Document)[k] : undefined), after);
        if (value === undefined) removedFields.push(path);
        else updatedFields[path] = cloneValue(value);
      }
      events.push({
        database,
        collection: name,
        operationType: "update",
        documentKey: { _id: after._id },
        fullDocument: cloneValue(after),
        updateDescription: { updatedFields, removedFields, truncatedArrays: [] },
      });
    }
    const first = results[0]!;
    const result: UpdateResult = {
      matched: results.length,
      modified: changes.length,
      before: first.before,
      after: cloneValue(first.after),
    };
    return { changes, events: () => events, result: () => ({ result }) };
  }

  private async delete(
    database: string,
    name: string,
    query: Document,
    many: boolean,
    sort: Document | undefined,
  ): Promise<Document[]> {
    const deleteFilter = this.rules.delete(this.principal, database, name);
    if (deleteFilter === null) throw errors.mongo("delete not permitted");
    this.checkQuery(query);
    const all = narrow(query, deleteFilter);
    return this.write(database, name, async (view) => {
      const docs = await this.matches(this.reader(database, name, view), all, sort ?? {}, many ? undefined : 1);
      const targets = this.limited(() => this.targets(docs, all, sort, many).map((d) => cloneValue(d)));
      return {
        changes: targets.map((doc) => ({ op: "delete" as const, id: doc._id })),
        events: () =>
          targets.map((doc) => ({
            database,
            collection: name,
            operationType: "delete" as const,
            documentKey: { _id: doc._id },
            before: doc,
          })),
        result: () => targets,
      };
    });
  }
}

/**
 * What an aggregation's first stages say of the documents it needs from its collection: a `$sort`
 * (after the leading `$match`, if any), then `$skip` and `$limit` with plain counts — the best (or
 * first) `skip + limit` matches are all the rest of the pipeline can see.
 */
export function pipelineHead(pipeline: Document[]): { sort: Document; want: number | undefined } {
  let i = isDocument(pipeline[0]?.$match) ? 1 : 0;
  let sort: Document = {};
  if (isDocument(pipeline[i]?.$sort)) sort = pipeline[i++]!.$sort as Document;
  let skip = 0;
  for (; i < pipeline.length; i++) {
    const stage = pipeline[i]!;
    const count = (value: unknown) => (typeof value === "number" && Number.isSafeInteger(value) ? value : undefined);
    if ("$skip" in stage && count(stage.$skip) !== undefined && count(stage.$skip)! >= 0) {
      skip += count(stage.$skip)!;
      continue;
    }
    const limit = "$limit" in stage ? count(stage.$limit) : undefined;
    if (limit !== undefined && limit > 0) return { sort, want: skip + limit };
    break;
  }
  return { sort, want: undefined };
}

/** The most documents one action of the app may examine (config `queryDocsExaminedLimit`). */
const docsExaminedLimitOf = (config: AppConfig) => config.queryDocsExaminedLimit ?? defaultDocsExaminedLimit;

/** Reads a collection's documents that may match a prefilter, in batches (the store's or a write's view's scan). */
type Reader = (prefilter: Document, options: ScanOptions) => AsyncIterable<Document[]>;

/** A plan that changes nothing. */
function nothing<T>(result: T): WritePlan<T> {
  return { changes: [], events: () => [], result: () => result };
}
