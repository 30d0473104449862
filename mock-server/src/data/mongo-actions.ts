/**
 * The `mongodb-atlas` service actions (`find`, `insertOne`, `aggregate`, …) with the argument
 * shapes the SDKs send and the result types the service answers (`count` as Int64, matched /
 * modified / deleted counts as Int32). Query, update and aggregation semantics are mingo's.
 *
 * Each action reads what it needs from the app's document store (the query, narrowed by the rule,
 * goes along so a store can fetch less: store/postgres/pushdown.ts), evaluates (query-jobs.ts: on
 * the main thread's slice, or in a query worker when it does not fit: evaluation.ts), and writes
 * through one atomic `write` of the store. A write whose decision needs a worker decides outside
 * the store's write turn and applies within it only if the documents it read are unchanged
 * (docs/decisions/0017-evaluation-off-the-main-thread.md).
 */
import { randomUUID } from "node:crypto";
import { BSONRegExp, Int32, Long } from "bson";
import { type AppConfig, defaultDocsExaminedLimit } from "../config/app-config.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { awkward, exactConditionsInSlices, meetsExactly } from "../store/exact-query.ts";
import {
  type AppliedChanges,
  type DocumentChange,
  QuotaExceededError,
  type ScanOptions,
  StoreTimeoutError,
  type WritePlan,
  WriteRateExceededError,
  type Writer,
  type WriteView,
} from "../store/store.ts";
import { bounded, type ReadBudget } from "./bounded-reads.ts";
import { bsonTypeAlias } from "./bson-order.ts";
import { wantsDocumentBefore } from "./change-events.ts";
import { type CollationSpec, comparesStrings, uncollatedPart, withCollation } from "./collation.ts";
import { collationOf } from "./collation-spec.ts";
import { documentTooLarge, tooLargeToInsert } from "./document-size.ts";
import {
  type ChangeEvent,
  cloneValue,
  type Document,
  idFirst,
  idKey,
  idRefusal,
  isDocument,
  toEJSONText,
} from "./documents.ts";
import { maxReplyBytes } from "./ejson-text.ts";
import { decideHere, decideInWorker, type Evaluation, laneGroup, readText, readValue } from "./evaluation.ts";
import { hasNear } from "./geo-queries.ts";
import { MergeIndex, mergeTargets, mergeUpdate } from "./merge-writes.ts";
import { type FunctionMongoAction, type MongoAction, mongoActions } from "./mongo-action-names.ts";
import { namespaceError } from "./namespaces.ts";
import { doubleOf, isNumeric } from "./numeric-operators.ts";
import {
  checkAggregation,
  checkProjection,
  checkUpdatePipeline,
  compileFindQuery,
  compileQuery,
  sortedPlaces,
} from "./query-engine.ts";
import {
  type DeleteJob,
  decideUpdate,
  fieldsOf,
  insertsOnly,
  isPositionalProjection,
  type JoinedRule,
  matching,
  maxResults,
  mongoError,
  passesFor,
  type ReadJob,
  referencedCollections,
  runRead,
  type UpdateDecision,
  type UpdateJob,
  type UpdateOptions,
  type UpdateSpec,
} from "./query-jobs.ts";
import {
  checkValue,
  NeedsWorker,
  newDocumentId,
  type QueryLimits,
  queryLimitsOf,
  withQueryLimits,
} from "./query-limits.ts";
import { narrow, type Principal, type Rules, rulesOf, type UserPrincipal, writerOf } from "./rules.ts";
import { readsPrevious, type SchemaCheck, schemaErrors, UnsupportedSchema } from "./schemas.ts";
import { shellText } from "./shell-text.ts";
import { sortSpecChecks } from "./stage-specs.ts";
import type { ActionDocuments } from "./transactions.ts";
import { inSlices, inTurns, Turns } from "./turns.ts";
import { updateOperatorChecks } from "./updater.ts";
import { hasNoKeys, isIndexKey, keepKeys, keysOf } from "./wide-keys.ts";
import { cloneInSlices, cloneToInsert, documentSizeInSlices, holdsWide } from "./wide-values.ts";
import {
  duplicateKey,
  type MergeSpec,
  mergeDuplicate,
  mergeFailure,
  mergeKey,
  outDuplicate,
  type Target,
  writeStageOf,
} from "./write-stages.ts";

export { type MongoAction, maxResults, mongoActions, referencedCollections };

export function isMongoAction(name: string): name is MongoAction {
  return (mongoActions as readonly string[]).includes(name);
}

/** An action a function's collection may ask for: a client's, or one of the functions' own. */
export function isFunctionMongoAction(name: string): name is FunctionMongoAction {
  return name === "replaceOne" || isMongoAction(name);
}

/** A sort key `exactFind` sorts by: a top-level field. */
const plainField = (key: string) => key !== "" && !key.startsWith("$") && !key.includes(".") && !awkward(key);

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

/**
 * The most sort fields an exact find reads from the store's texts (MongoDB sorts on at most 32
 * keys); a wider sort is evaluated as any other, where it fits (a 200,000-key sort read the keys of
 * every match on the main thread at once, 0.36 s).
 */
const maxExactSortFields = 32;

/**
 * An action's `sort`, its keys checked as MongoDB's SortPattern checks them (an empty one: no
 * sort), in turns on the main thread.
 */
async function optionalSort(args: Document): Promise<Document> {
  const sort = optionalDocument(args, "sort");
  if (keysOf(sort).length > 0) await inTurns(sortSpecChecks(sort));
  return sort;
}

function optionalLimit(args: Document): number | undefined {
  const value = args.limit;
  if (value === undefined || value === null) return undefined;
  const n = typeof value === "number" ? value : value instanceof Long ? value.toNumber() : Number.NaN;
  if (!Number.isInteger(n)) throw errors.mongo("'limit' must be an integer");
  return n === 0 ? undefined : Math.abs(n);
}

/** The batches of a scan, each document also kept by `_id` key. */
async function* keeping(batches: AsyncIterable<Document[]>, kept: Map<string, Document>): AsyncGenerator<Document[]> {
  for await (const batch of batches) {
    for (const doc of batch) kept.set(idKey(doc._id), doc);
    yield batch;
  }
}

/**
 * The stages an app user's pipeline may not hold, as the service's last documentation lists them
 * (decision 0002); a system user's may (`$indexStats` is no one's). A user's `$lookup` and
 * `$unionWith` read their collections as the rules of those let the user read them.
 */
const systemOnlyStages = new Set(["$collStats", "$facet", "$geoNear", "$graphLookup", "$merge", "$out"]);
const nobodysStages = new Set(["$indexStats"]);
/** The first stages that read no collection (those this server runs): a database's aggregation begins with one. */
const collectionless = new Set(["$documents"]);
/** The expression operators an app user's pipeline may not use, anywhere in it. */
const systemOnlyOperators = new Set(["$function"]);

/** The stages of a pipeline, and of the pipelines its `$lookup`s and `$unionWith`s run. */
function* stagesOf(pipeline: unknown): Generator<string> {
  if (!Array.isArray(pipeline)) return;
  for (const stage of pipeline) {
    if (!isDocument(stage)) continue;
    const op = Object.keys(stage)[0];
    if (op === undefined) continue;
    yield op;
    const spec = stage[op];
    if ((op === "$lookup" || op === "$unionWith") && isDocument(spec)) yield* stagesOf(spec.pipeline);
  }
}

/**
 * The stages and operators the principal may not use refused; the walk of an app user's
 * pipeline gives other requests their turns between slices (a pipeline can be 200,000 fields wide).
 */
async function checkPipeline(principal: Principal, pipeline: Document[]): Promise<void> {
  const user = principal.kind === "user";
  for (const op of user ? stagesOf(pipeline) : pipeline.map((stage) => Object.keys(stage)[0]))
    if (op !== undefined && (nobodysStages.has(op) || (user && systemOnlyStages.has(op))))
      throw errors.mongo(`${op} is not allowed in this context`);
  if (!user) return;
  const turns = new Turns();
  const pending: unknown[] = [pipeline];
  let looked = 0;
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) for (const item of value) pending.push(item);
    else if (isDocument(value))
      for (const key of keysOf(value)) {
        if (systemOnlyOperators.has(key)) throw errors.mongo(`${key} is not allowed in this context`);
        pending.push(value[key]);
        if ((++looked & 1023) === 0) await turns.maybe();
      }
  }
}

/** How often an upsert that met its own `_id` inserted meanwhile is tried (MongoDB: until it stops meeting it). */
const maxUpsertAttempts = 4;

/**
 * Whether a query is an equality on `_id` and nothing else (`{_id: v}`, `{_id: {$eq: v}}`): the
 * fields of the unique index, as MongoDB's retry asks (a query naming other fields too may not
 * match the document that is there).
 */
function equalityOnId(query: Document): boolean {
  const fields = keysOf(query);
  if (fields.length !== 1 || fields[0] !== "_id") return false;
  const id = query._id;
  if (!isDocument(id)) return !(id instanceof RegExp || id instanceof BSONRegExp);
  const keys = keysOf(id);
  if (keys.length === 1 && keys[0] === "$eq") return true;
  return !keys.some((key) => key.startsWith("$"));
}

function hasOperators(update: Document): boolean {
  return Object.keys(update).some((k) => k.startsWith("$"));
}

/** A copy of a value (cloneValue): a wide one's in slices (wide-values.ts). */
function copyOf<T>(value: T): T | Promise<T> {
  return holdsWide(value) ? cloneInSlices(value) : cloneValue(value);
}

/** A store's refusal of a write (an app's or a writer's limit) as the service's error of it; anything else as it is. */
export function writeRefusal(error: unknown, writer: Writer | undefined): unknown {
  if (error instanceof QuotaExceededError) return errors.quotaExceeded(error.quota, error.limit, error.held);
  if (error instanceof WriteRateExceededError) return errors.tooManyWrites(error.limit, writer?.anonymous ?? false);
  return error;
}

/** What an action needs of its app: the settings (rules, limits) and the documents. */
export interface MongoApp {
  readonly appId?: string;
  readonly config: AppConfig;
  readonly data: ActionDocuments;
  /** The user's custom data document, for rules that name `%%user.custom_data`. */
  customUserDocument?(userId: string): Promise<Document | undefined>;
  /** Runs one of the app's functions for a rule's `%function`, as the user. */
  callRuleFunction?(name: string, args: unknown[], principal: UserPrincipal): Promise<unknown>;
  /** The app's clock (the control API moves it): the time of its actions when it is not the real one. */
  readonly clock?: { readonly offsetMs: number; now(): number };
}

interface UpdateResult {
  matched: number;
  modified: number;
  upsertedId?: unknown;
  before?: Document;
  after?: Document;
}

/** Whether a write's documents are still those its decision was made over (same objects, or same text). */
function sameDocuments(now: Document[], then: Document[]): boolean {
  if (now.length !== then.length) return false;
  for (let i = 0; i < now.length; i++) {
    if (now[i] !== then[i] && toEJSONText(now[i]) !== toEJSONText(then[i])) return false;
  }
  return true;
}

/**
 * Whether an update's document is a replacement: a document without update operators, which the
 * service passed on to MongoDB as one (realm-web's, realm-core's and realm-kotlin's own tests
 * against it update with `{name: "Alison"}`, and a `findOneAndUpdate` upsert of such a document
 * holds none of the query's fields: docs/decisions/0002). An empty document too.
 */
const isReplacement = (spec: unknown): boolean => isDocument(spec) && !hasOperators(spec);

/** The plan that tells `decided` to decide in a worker, outside the write turn, and come back. */
const elsewhere = Symbol("decide elsewhere");

export class MongoService {
  private readonly rules: Rules;
  private readonly limits: QueryLimits;
  private readonly lane: string;
  private readonly group: string | undefined;
  /** What the action may still read (its deadline, the documents it may examine). */
  private budget: ReadBudget = { deadline: 0, maxExamined: 0, examined: 0 };
  /** The action's collation (a system function's option; collation.ts), if any. */
  private collation: CollationSpec | undefined;
  /**
   * The app's time of the action (its clock, which the control API moves): its `$currentDate`,
   * its one `$$NOW` and its new `_id`s (query-limits.ts LimitOptions.now).
   */
  private readonly now: number;

  constructor(
    private readonly app: MongoApp,
    private readonly principal: Principal,
    private readonly options: {
      /** A function's `bulkWrite(…, {bypassDocumentValidation: true})`: its writes skip the schema (never a client's). */
      bypassDocumentValidation?: boolean;
      /** An action of a multi-document transaction (`app.data` is the transaction's view). */
      inTransaction?: boolean;
      /** A function's action: `aggregate` without a collection is its `db.aggregate()`. */
      fromFunction?: boolean;
    } = {},
  ) {
    this.rules = rulesOf(app);
    this.limits = queryLimitsOf(app.config);
    this.lane = `${app.appId ?? ""}:${principal.kind === "user" ? principal.user.id : "system"}`;
    this.group = laneGroup(app.appId ?? "", principal.address);
    this.now = app.clock?.now() ?? Date.now();
  }

  /**
   * A write through the store, as the caller (its documents count against its limits); one past
   * the app's limits or the caller's answers the documented error of that limit.
   */
  private async write<T>(database: string, name: string, plan: (view: WriteView) => Promise<WritePlan<T>>): Promise<T> {
    const writer = writerOf(this.principal);
    try {
      return await this.app.data.write(database, name, this.withSchema(database, name, plan), writer);
    } catch (error) {
      throw writeRefusal(error, writer);
    }
  }

  /**
   * The plan, each document it writes checked against the collection's schema (data/schemas.ts):
   * one that fails refuses the whole write. A user's writes only: system functions bypass schemas
   * as they bypass rules.
   */
  private withSchema<T>(
    database: string,
    name: string,
    plan: (view: WriteView) => Promise<WritePlan<T>>,
  ): (view: WriteView) => Promise<WritePlan<T>> {
    const namespace = `${database}.${name}`;
    const checked = this.principal.kind === "user" && this.options.bypassDocumentValidation !== true;
    const schema = checked ? this.app.config.schemas?.[namespace] : undefined;
    if (schema === undefined) return plan;
    const check: SchemaCheck = {
      nullable: this.app.config.nullTypeSchemaValidation === true,
      expansions: this.rules.expansions(this.principal as UserPrincipal),
    };
    // (The documents before the write, by `_id`, only for a schema whose expressions may read them.)
    const before = readsPrevious(schema) ? new Map<string, Document>() : null;
    return async (view) => {
      const decided = await plan(
        before === null ? view : { scan: (prefilter, options) => keeping(view.scan(prefilter, options), before) },
      );
      await inSlices(decided.changes, (change) => {
        if (change.op === "delete") return;
        let found: string[];
        try {
          found = schemaErrors(change.doc, schema, check, before?.get(idKey(change.doc._id)));
        } catch (error) {
          if (error instanceof UnsupportedSchema)
            throw errors.mongo(`the schema of '${namespace}' cannot be evaluated here: ${error.message}`);
          throw error;
        }
        if (found.length > 0)
          throw errors.mongo(`could not validate document: ${found.map((one) => `\n\t${one}`).join("")}`);
      });
      return decided;
    };
  }

  /**
   * Checks what an action asks as the server checks it (its errors, even when there is nothing to
   * run it on), on the main thread within its slice: a value too large to look at here is checked
   * where it runs (the engine checks every query and pipeline it runs).
   */
  private checkHere(evaluation: Evaluation, value: unknown, what: string, check: () => void): void {
    try {
      withQueryLimits(
        this.limits,
        () => {
          checkValue(value, what);
          check();
        },
        { deadline: evaluation.deadline, mainThread: true, now: this.now },
      );
    } catch (error) {
      if (!(error instanceof NeedsWorker)) mongoError(error);
    }
  }

  /** A `findOneAnd…`'s projection, refused as MongoDB parses it: before the action writes. */
  private checkProjection(evaluation: Evaluation, projection: Document): void {
    if (hasNoKeys(projection)) return;
    this.checkHere(evaluation, projection, "projection", () => checkProjection(projection));
  }

  private checkQuery(evaluation: Evaluation, query: Document, find = false): void {
    if (hasNoKeys(query)) return;
    this.checkHere(evaluation, query, "query", () => (find ? compileFindQuery(query) : compileQuery(query)));
  }

  /**
   * Runs one action and answers its result as canonical Extended JSON text, capped at MongoDB's
   * largest reply: reads, then evaluates under the query limits (a deadline for the whole action,
   * a memory ceiling; on the main thread's slice or in a worker), then writes.
   */
  async runText(action: FunctionMongoAction, args: Document): Promise<string> {
    return (await this.execute(action, args, true)) as string;
  }

  /** Runs one action and answers its result as a value (the control API's callers). */
  async run(action: FunctionMongoAction, args: Document): Promise<unknown> {
    return this.execute(action, args, false);
  }

  /** An action's evaluation: its deadline the app's query time limit from now, or the action's own (`maxTimeMS`). */
  private evaluation(operator: string, timeoutMs = this.limits.timeoutMs): Evaluation {
    return {
      limits: this.limits,
      deadline: performance.now() + timeoutMs,
      lane: this.lane,
      ...(this.group ? { group: this.group } : {}),
      operator,
      ...(this.collation ? { collation: this.collation } : {}),
      now: this.now,
    };
  }

  /**
   * Whether the action's collation may change how `query` matches: a store's exact answers
   * (indexes, pushdowns, stored texts) compare strings by code point, so such a query is matched
   * by the query engine over every document of the collection (as MongoDB, whose indexes here
   * have the simple collation, scans it).
   */
  private collated(query: Document): boolean {
    return this.collation !== undefined && comparesStrings(query);
  }

  private async execute(action: FunctionMongoAction, args: Document, asText: boolean): Promise<unknown> {
    try {
      return await this.executeAction(action, args, asText);
    } catch (error) {
      // A database statement past its time (or cancelled at the deadline) is the action's.
      if (error instanceof StoreTimeoutError) throw errors.queryTimeLimit();
      throw error;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Reads bounded in time and documents (bounded-reads.ts, docs/decisions/0018-fair-shares.md)

  /**
   * The documents of a collection an action evaluates (the query engine then matches, sorts and
   * cuts them: query-jobs.ts), read in batches checked against the action's budget between them.
   * Each batch is matched as it comes and only its matches are kept: a query of plain equalities
   * (store/exact-query.ts) is decided here without the query engine, any other is matched on the
   * main thread's slice (a read that keeps every match stops matching once a batch keeps most of
   * its documents; a find's `$near` is matched where it is evaluated). Without a sort, the first
   * `want` matching documents are all the action can use, so the read stops once it has them, the
   * batches starting about `want` long and growing. A batch whose match does not fit its slice is
   * kept whole for the action's evaluation (in a worker), which matches it again: when the slice ran
   * out of time (a busy machine) the next batch tries again, and after `sliceMisses` such batches in
   * a row, or a match too heavy for any slice, the read goes on without matching; should it reach
   * the documents the action may examine, whether they hold `want` matches decides between its
   * answer and the error: `atLimit` tells, by default their count of matches (evaluated as any
   * other, in a worker when it does not fit). With a sort, or no `want`, every candidate the store
   * hands back is read, up to the documents the action may examine (past them a sorted read is
   * refused, whatever it matched: its best documents may be further on).
   */
  private async candidates(
    evaluation: Evaluation,
    reader: Reader,
    query: Document,
    sort: Document,
    want: number | undefined,
    atLimit: (found: Document[]) => Promise<boolean> = async (found) =>
      Number(await readValue(evaluation, { kind: "count", query, limit: want! }, found)) >= want!,
  ): Promise<Document[]> {
    return (await this.readMatching(reader, query, sort, want, true, atLimit)).found;
  }

  /**
   * A `count`'s matches: read as `candidates` reads, but every batch is matched on the main thread's
   * slice, with a limit or without, and the documents that match are counted, not kept (a count of
   * 50,000 documents kept them all and evaluated them again in a worker). A batch whose match does
   * not fit the slice is kept and counted by the evaluation, as any read's.
   */
  private async countMatching(
    evaluation: Evaluation,
    reader: Reader,
    query: Document,
    limit: number | undefined,
  ): Promise<number> {
    const countOf = async (docs: Document[]) =>
      docs.length === 0 ? 0 : Number(await readValue(evaluation, { kind: "count", query }, docs));
    const { found, matches } = await this.readMatching(
      reader,
      query,
      {},
      limit,
      false,
      async (kept, counted) => limit !== undefined && counted + (await countOf(kept)) >= limit,
    );
    const n = matches + (await countOf(found));
    return limit === undefined ? n : Math.min(n, limit);
  }

  /**
   * `candidates`' read: `found` holds what was read (with `keepMatches` false, only the batches not
   * matched here), `matches` how many documents were matched here. `atLimit` gets both.
   */
  private async readMatching(
    reader: Reader,
    query: Document,
    sort: Document,
    want: number | undefined,
    keepMatches: boolean,
    atLimit: (found: Document[], matches: number) => Promise<boolean>,
  ): Promise<{ found: Document[]; matches: number }> {
    const early = want !== undefined && Object.keys(sort).length === 0;
    // (A find's `$near` orders its matches, and the find's evaluation takes it where a plain match
    // refuses it: such a read is matched where it is evaluated.)
    const matchHere = !hasNoKeys(query) && (early || !keepMatches || !(await hasNear(query)));
    const conditions = matchHere && !this.collated(query) ? await exactConditionsInSlices(query) : null;
    let match: ((batch: Document[]) => Document[]) | null = null;
    if (conditions !== null) match = (batch) => batch.filter((doc) => meetsExactly(doc, conditions));
    else if (matchHere) match = (batch) => this.matchOnSlice(batch, query);
    const max = this.budget.maxExamined - this.budget.examined;
    const options: ScanOptions = { max, deadline: this.budget.deadline };
    if (early) options.want = want;
    const found: Document[] = [];
    // Documents known to match, and whether a batch was kept unmatched before them.
    let matches = 0;
    let unmatched = false;
    let misses = 0;
    // At the limit with batches kept unmatched: whether what was read holds the `want` matches (a
    // sorted read's best documents may be past it: never).
    const enough = async () => (early || !keepMatches) && unmatched && (await atLimit(found, matches));
    for await (const batch of bounded(reader(query, options), this.budget, enough)) {
      let kept = batch;
      let matched = false;
      if (match !== null) {
        try {
          kept = match(batch);
          matches += kept.length;
          misses = 0;
          matched = true;
          // Matched here, a read that keeps every match saves only what the match drops: once a
          // batch keeps most of its documents, the rest go to the evaluation unmatched.
          if (!early && keepMatches && batch.length >= 64 && kept.length * 4 > batch.length * 3) {
            match = null;
            unmatched = true;
          }
        } catch (error) {
          if (!(error instanceof NeedsWorker)) throw error;
          unmatched = true;
          if (error.why !== "time" || ++misses >= sliceMisses) match = null;
        }
      }
      if (keepMatches || !matched) for (const doc of kept) found.push(doc);
      if (early && match !== null && matches >= want!)
        return { found: unmatched || !keepMatches ? found : found.slice(0, want), matches };
    }
    return { found, matches };
  }

  /**
   * A `find` without a projection of a query the store decides exactly (store/exact-query.ts),
   * sorted by top-level fields or not at all, answered from the matches' stored texts as they are:
   * nothing is parsed whole, matched again or written again. The sort runs on the fields' values
   * alone, through the same engine (so in the same order, with the same limits); the reply's cap
   * is checked against the texts' sizes. Undefined — the store cannot, the sort needs a worker, or
   * the reply may be past the cap — and the action reads and evaluates as any other.
   */
  private async exactFind(
    evaluation: Evaluation,
    database: string,
    name: string,
    query: Document,
    sort: Document,
    limit: number,
    one: boolean,
  ): Promise<string | undefined> {
    const store = this.app.data;
    const fields = keysOf(sort);
    if (
      store.exactTexts === undefined ||
      this.collation !== undefined ||
      fields.length > maxExactSortFields ||
      !fields.every(plainField) ||
      (await exactConditionsInSlices(query)) === null
    )
      return undefined;
    const found = await store.exactTexts(database, name, query, {
      fields,
      max: this.budget.maxExamined - this.budget.examined,
      deadline: this.budget.deadline,
      ...(fields.length === 0 ? { want: limit } : {}),
    });
    if (found === undefined) return undefined;
    // As a scan's batches are checked (bounded-reads.ts).
    if (this.budget.examined + found.examined > this.budget.maxExamined)
      throw errors.docsExaminedLimit(this.budget.maxExamined);
    if (performance.now() > this.budget.deadline) throw errors.queryTimeLimit();
    let order = found.texts.map((_, i) => i);
    if (fields.length > 0) {
      try {
        order = withQueryLimits(this.limits, () => sortedPlaces(found.keys, sort, limit), {
          deadline: evaluation.deadline,
          mainThread: true,
          now: this.now,
        });
      } catch (error) {
        if (error instanceof NeedsWorker) return undefined;
        return mongoError(error);
      }
    }
    if (order.length > limit) order = order.slice(0, limit);
    // The reply's BSON size at most: an array (4 + 1 bytes) of elements (a type byte, the index's
    // digits, a NUL, the document), or the one document.
    let bytes = one ? 0 : 5;
    for (let i = 0; i < order.length; i++) bytes += found.sizes[order[i]!]! + (one ? 0 : 2 + String(i).length);
    if (bytes > maxReplyBytes) return undefined;
    this.budget.examined += found.examined;
    if (one) return order.length === 0 ? "null" : found.texts[order[0]!]!;
    let text = "[";
    for (let i = 0; i < order.length; i++) text += (i === 0 ? "" : ",") + found.texts[order[i]!]!;
    return `${text}]`;
  }

  /** The documents of a batch matching a query, on the main thread's slice (NeedsWorker past it). */
  private matchOnSlice(batch: Document[], query: Document): Document[] {
    try {
      return withQueryLimits(this.limits, () => withCollation(this.collation, () => matching(batch, query)), {
        deadline: this.budget.deadline,
        mainThread: true,
        now: this.now,
      });
    } catch (error) {
      if (error instanceof NeedsWorker) throw error;
      return mongoError(error);
    }
  }

  /** What a collection's documents are read through: the store, or a write's view. */
  private reader(database: string, name: string, view?: WriteView): Reader {
    const scan: Reader = view
      ? (prefilter, options) => view.scan(prefilter, options)
      : (prefilter, options) => this.app.data.scan(database, name, prefilter, options);
    return (prefilter, options) => scan(this.collated(prefilter) ? uncollatedPart(prefilter) : prefilter, options);
  }

  private async executeAction(action: FunctionMongoAction, args: Document, asText: boolean): Promise<unknown> {
    const database = requireString(args, "database");
    // A function's `db.aggregate()`: MongoDB's `{aggregate: 1}`, over no collection.
    const ofDatabase = action === "aggregate" && args.collection === undefined && this.options.fromFunction === true;
    const name = ofDatabase ? undefined : requireString(args, "collection");
    // (The database's own: its name checked as a collection's database.)
    const invalid = namespaceError(database, name ?? "1");
    if (invalid !== undefined) throw errors.mongo(invalid);
    if (name !== undefined) await this.rules.prepare(this.principal, database, [name]);
    this.collation = collationOf(action, args, this.principal.kind === "user");
    // A function's aggregation may set its own time limit (App Services' `maxTimeMS` option).
    const evaluation = this.evaluation(action, ownTimeLimit(action, args, this.options.fromFunction === true));
    this.budget = {
      deadline: evaluation.deadline,
      maxExamined: docsExaminedLimitOf(this.app.config),
      examined: 0,
    };
    const reply = (value: unknown) => (asText ? toEJSONText(value) : value);
    const read = (job: ReadJob, docs: Document[], others?: Record<string, Document[]>) =>
      asText ? readText(evaluation, job, docs, others) : readValue(evaluation, job, docs, others);
    if (name === undefined) return this.aggregate(evaluation, database, undefined, args, read, reply);
    switch (action) {
      case "find":
      case "findOne": {
        const query = optionalDocument(args, "query");
        this.checkQuery(evaluation, query, true);
        const filter = this.rules.read(this.principal, database, name);
        if (filter === null) return reply(action === "find" ? [] : null);
        const all = narrow(query, filter);
        const limit = action === "findOne" ? 1 : Math.min(optionalLimit(args) ?? maxResults, maxResults);
        const sort = await optionalSort(args);
        const projection = optionalDocument(args, "project");
        const one = action === "findOne";
        const shape = this.rules.readShape(this.principal, database, name);
        if (asText && Object.keys(projection).length === 0 && !shape) {
          const text = await this.exactFind(evaluation, database, name, all, sort, limit, one);
          if (text !== undefined) return text;
        }
        // A geo-near find orders every match by distance: none is left unread.
        const readOrder = hasNoKeys(sort) && (await hasNear(all)) ? { $natural: 1 } : sort;
        const docs = await this.candidates(evaluation, this.reader(database, name), all, readOrder, limit);
        const job: ReadJob = { kind: "find", query: all, projection, sort, limit, one, ...(shape ? { shape } : {}) };
        return read(job, docs);
      }
      case "count": {
        const query = optionalDocument(args, "query");
        this.checkQuery(evaluation, query);
        const filter = this.rules.read(this.principal, database, name);
        if (filter === null) return reply(Long.fromNumber(0));
        const all = narrow(query, filter);
        const limit = optionalLimit(args);
        // Counted by the store when it evaluates the query exactly; else read (bounded) and evaluated.
        const exact = this.collated(all)
          ? undefined
          : await this.app.data.countExact(database, name, all, { limit, deadline: this.budget.deadline });
        if (exact !== undefined) return reply(Long.fromNumber(exact));
        return reply(Long.fromNumber(await this.countMatching(evaluation, this.reader(database, name), all, limit)));
      }
      case "aggregate":
        return this.aggregate(evaluation, database, name, args, read, reply);
      case "insertOne": {
        const document = args.document;
        if (!isDocument(document)) throw errors.mongo("'document' must be a document");
        const [id] = await this.insert(database, name, [document]);
        return reply({ insertedId: id });
      }
      case "insertMany": {
        const documents = args.documents;
        if (!Array.isArray(documents)) throw errors.mongo("'documents' must be an array");
        if (documents.length === 0) throw errors.mongo("must provide at least one element");
        if (!documents.every(isDocument)) throw errors.mongo("'documents' must only contain documents");
        return reply({ insertedIds: await this.insert(database, name, documents as Document[]) });
      }
      case "updateOne":
      case "updateMany":
      case "replaceOne": {
        const replace = action === "replaceOne" || isReplacement(args.update);
        const result = await this.update(evaluation, database, name, optionalDocument(args, "query"), args.update, {
          many: action === "updateMany",
          upsert: args.upsert === true,
          replace,
          arrayFilters: replace ? undefined : args.arrayFilters,
        });
        return reply({
          matchedCount: new Int32(result.matched),
          modifiedCount: new Int32(result.modified),
          ...(result.upsertedId !== undefined ? { upsertedId: result.upsertedId } : {}),
        });
      }
      case "deleteOne":
      case "deleteMany": {
        const deleted = await this.delete(
          evaluation,
          database,
          name,
          optionalDocument(args, "query"),
          action === "deleteMany",
          undefined,
        );
        return reply({ deletedCount: new Int32(deleted.length) });
      }
      case "findOneAndUpdate":
      case "findOneAndReplace": {
        const replace = action === "findOneAndReplace" || isReplacement(args.update);
        // realm-web 2.0.1 sends findOneAndDelete as findOneAndReplace without `update`: the service
        // then replaces the match with an empty document (only `_id` is left), and so do we.
        const spec = replace && args.update === undefined ? {} : args.update;
        // The new document may no longer match the filter a positional projection needs (MongoDB
        // refuses it before anything is written).
        const projection = optionalDocument(args, "projection");
        if (args.returnNewDocument === true && isPositionalProjection(projection))
          throw errors.mongo("cannot use a positional projection and return the new document");
        this.checkProjection(evaluation, projection);
        const filter = optionalDocument(args, "filter");
        const result = await this.update(
          evaluation,
          database,
          name,
          filter,
          spec,
          {
            many: false,
            upsert: args.upsert === true,
            replace,
            arrayFilters: undefined,
            sort: await optionalSort(args),
          },
          this.projectsBefore(database, name, args, filter),
          true,
        );
        if (args.returnNewDocument === true)
          return result.after ? read(this.projectJob(database, name, args), [result.after]) : reply(null);
        return result.before ? read(this.projectJob(database, name, args, filter), [result.before]) : reply(null);
      }
      case "findOneAndDelete": {
        this.checkProjection(evaluation, optionalDocument(args, "projection"));
        const filter = optionalDocument(args, "filter");
        const sort = await optionalSort(args);
        const before = this.projectsBefore(database, name, args, filter);
        const [doc] = await this.delete(evaluation, database, name, filter, false, sort, before, true);
        return doc ? read(this.projectJob(database, name, args, filter), [doc]) : reply(null);
      }
    }
  }

  /**
   * The documents of `query` the caller may also read: a `findOneAnd…` finds (a read) before it
   * writes, so a document the read rule hides is not found, changed or answered, where a write
   * rule wider than the read rule (the short form's) would have let it be (none when nothing may be
   * read). Narrowed in the matching only: an upsert's new document still takes the query's fields.
   */
  private readableOnly(database: string, name: string, query: Document): Document {
    const readFilter = this.rules.read(this.principal, database, name);
    return readFilter === null ? { $and: [query, { _id: { $in: [] } }] } : narrow(query, readFilter);
  }

  /**
   * A `findOneAnd…`'s positional projection of the document it targets, tried before it writes:
   * the element the filter matched is the document's to tell (MongoDB refuses a projection that
   * finds none, and writes nothing).
   */
  private projectsBefore(database: string, name: string, args: Document, filter: Document) {
    const projection = optionalDocument(args, "projection");
    if (args.returnNewDocument === true || !isPositionalProjection(projection)) return undefined;
    const job = this.projectJob(database, name, args, filter);
    return (target: Document) => {
      withCollation(this.collation, () => runRead(job, [target]));
    };
  }

  /**
   * A `findOneAnd…` action's answer: its document as the rules let the caller read it, projected
   * (a positional path by the element `query`, the action's filter, matched in the document before).
   */
  private projectJob(database: string, name: string, args: Document, query?: Document): ReadJob {
    const shape = this.rules.readShape(this.principal, database, name);
    const projection = optionalDocument(args, "projection");
    return {
      kind: "project",
      projection,
      ...(shape ? { shape } : {}),
      ...(query && isPositionalProjection(projection) ? { query } : {}),
    };
  }

  /** An aggregation of a collection, or (`name` undefined) of the database: `{aggregate: 1}`. */
  private async aggregate(
    evaluation: Evaluation,
    database: string,
    name: string | undefined,
    args: Document,
    read: (job: ReadJob, docs: Document[], others?: Record<string, Document[]>) => Promise<unknown>,
    reply: (value: unknown) => unknown,
  ): Promise<unknown> {
    const pipeline = args.pipeline;
    if (!Array.isArray(pipeline) || !pipeline.every(isDocument))
      throw errors.mongo("'pipeline' must be an array of stages");
    await checkPipeline(this.principal, pipeline as Document[]);
    // Refused as MongoDB parses it before anything is read.
    this.checkHere(evaluation, pipeline, "pipeline", () => checkAggregation(pipeline as Document[], database));
    // A collection's first stage reads it; the database's, none (MongoDB's validateTopLevelPipeline).
    const source = isDocument(pipeline[0]) ? keysOf(pipeline[0])[0] : undefined;
    if (name === undefined) {
      if (source === undefined) throw errors.mongo("{aggregate: 1} is not valid for an empty pipeline.");
      if (!collectionless.has(source))
        throw errors.mongo(`{aggregate: 1} is not valid for '${source}'; a collection is required.`);
    } else if (source !== undefined && collectionless.has(source))
      throw errors.mongo(`'${source}' can only be run with {aggregate: 1}`);
    // A last `$out` or `$merge` writes the results of the stages before it (write-stages.ts).
    const writes = writeStageOf(pipeline as Document[], database);
    if (writes !== undefined) {
      if (this.options.inTransaction)
        throw errors.mongo(`Stage not supported inside of a multi-document transaction: ${writes.kind}`);
      const invalid = namespaceError(writes.database, writes.collection);
      if (invalid !== undefined) throw errors.mongo(invalid);
    }
    // (The database's pipeline makes its own documents: no rule reads them.)
    const filter = name === undefined ? {} : this.rules.read(this.principal, database, name);
    if (filter === null) return reply([]);
    // Documents cut down by the rules are filtered and cut before the first stage; others are
    // filtered by a first $match of the rule's filter.
    const shape = name === undefined ? undefined : this.rules.readShape(this.principal, database, name);
    const ruled = Object.keys(filter).length > 0;
    const stages = ruled && !shape ? [{ $match: filter }, ...(pipeline as Document[])] : (pipeline as Document[]);
    // A leading $match narrows what the store fetches, like the rule's filter; a $sort, $skip and
    // $limit after it, how many of those documents the pipeline can use. Not over documents cut
    // down: the $match sees them cut, where one on a field the cut removes (`$exists: false`)
    // holds for a stored document that fails it, so such a read takes every document of the rule.
    const first = pipeline[0] as Document | undefined;
    const leading = isDocument(first?.$match) ? first.$match : {};
    const seesCut = shape !== undefined && !hasNoKeys(leading);
    const head = seesCut ? { sort: {}, want: undefined } : pipelineHead(pipeline as Document[]);
    const docs =
      name === undefined
        ? []
        : await this.candidates(
            evaluation,
            this.reader(database, name),
            seesCut ? filter : narrow(leading, filter),
            head.sort,
            head.want,
          );
    // The other collections the pipeline reads, each as its rules let the caller read it.
    const others: Record<string, Document[]> = {};
    const joined: Record<string, JoinedRule> = {};
    const referenced = [...referencedCollections(pipeline)];
    await this.rules.prepare(this.principal, database, referenced);
    for (const other of referenced) {
      const otherFilter = this.rules.read(this.principal, database, other);
      if (otherFilter === null) {
        joined[other] = { hidden: true };
        continue;
      }
      const otherShape = this.rules.readShape(this.principal, database, other);
      if (!hasNoKeys(otherFilter) || otherShape)
        joined[other] = {
          ...(hasNoKeys(otherFilter) ? {} : { filter: otherFilter }),
          ...(otherShape ? { shape: otherShape } : {}),
        };
      others[other] = await this.candidates(evaluation, this.reader(database, other), otherFilter, {}, undefined);
    }
    const job = {
      kind: "aggregate" as const,
      ...(shape ? { shape, ...(ruled ? { filter } : {}) } : {}),
      ...(hasNoKeys(joined) ? {} : { joined }),
    };
    if (writes === undefined) return read({ ...job, stages }, docs, others);
    const reading = { ...job, stages: stages.slice(0, -1), written: true };
    const results = (await readValue(evaluation, reading, docs, others)) as Document[];
    if (writes.kind === "$out") await this.out(writes, results);
    else await this.merge(evaluation, writes, results);
    // (The service answers an empty cursor: the results are in the target.)
    return reply([]);
  }

  /**
   * `$out`: the target's documents replaced by the results in one write, or (a result refused)
   * left as they were. MongoDB writes the results into a temporary collection and renames it over
   * the target, so no insert or delete of the target's documents is an event of its streams or
   * triggers here either: the write's one event is that rename (which ends the target's streams).
   */
  private async out(target: Target, results: Document[]): Promise<void> {
    // The collection MongoDB would fill, named in its refusals.
    const temporary = `tmp.agg_out.${randomUUID()}`;
    const docs: Document[] = [];
    const seen = new Set<string>();
    const turns = new Turns();
    for (const result of results) {
      const doc = result._id === undefined ? { _id: newDocumentId(this.now), ...result } : idFirst(result);
      const refusal = idRefusal(doc);
      if (refusal !== null) throw errors.mongo(refusal);
      const tooLarge = documentTooLarge(doc);
      if (tooLarge) throw tooLarge;
      const key = idKey(doc._id);
      if (seen.has(key)) throw errors.mongo(outDuplicate(target, temporary, doc._id));
      seen.add(key);
      docs.push(doc);
      await turns.maybe();
    }
    await this.write(target.database, target.collection, async (view) => {
      const changes: DocumentChange[] = [];
      for await (const batch of view.scan({})) for (const doc of batch) changes.push({ op: "delete", id: doc._id });
      for (const doc of docs) changes.push({ op: "insert", doc });
      const to = { db: target.database, coll: target.collection };
      const renamed: ChangeEvent = { database: target.database, collection: temporary, operationType: "rename", to };
      return { changes, events: () => [renamed], result: () => undefined };
    });
  }

  /**
   * `$merge`: each result written into the target as MongoDB writes it (an update or insert of
   * the document its `on` fields name), as one unordered batch: the results' keys are all taken
   * first (a result without one writes nothing), then every result that can be written is, and
   * the first refusal is the answer; matched documents stay changed when another result matched
   * none under `whenNotMatched: "fail"`. The results go in slices, each one write of the store
   * (`mergeSlice`); each change is an event of the target's streams and triggers.
   */
  private async merge(evaluation: Evaluation, spec: MergeSpec, results: Document[]): Promise<void> {
    const byId = spec.on.includes("_id");
    const docs: Document[] = [];
    const keys: Document[] = [];
    const turns = new Turns();
    for (const result of results) {
      const doc = byId && result._id === undefined ? { _id: newDocumentId(this.now), ...result } : result;
      keys.push(mergeKey(doc, spec.on));
      docs.push(doc);
      await turns.maybe();
    }
    const outcome: MergeOutcome = { unmatched: false };
    for (let from = 0; from < docs.length; ) {
      const to = Math.min(docs.length, from + mergeSlice);
      from += await this.mergeSlice(evaluation, spec, docs.slice(from, to), keys.slice(from, to), outcome);
      // A result decided in a worker (its update too much for the main thread's slice) goes alone.
      if (outcome.elsewhere) {
        outcome.elsewhere = false;
        await this.mergeOne(evaluation, spec, docs[from]!, keys[from]!, outcome);
        from++;
      }
      if (performance.now() > this.budget.deadline) throw errors.queryTimeLimit();
    }
    if (outcome.refused !== undefined) throw outcome.refused;
    if (spec.whenNotMatched === "fail" && outcome.unmatched)
      throw errors.mongo(
        "$merge could not find a matching document in the target collection for at least one document in the source collection",
      );
  }

  /** The update job of one `$merge` result, as its modes write it (merge-writes.ts `mergeUpdate`). */
  private mergeJob(evaluation: Evaluation, spec: MergeSpec, doc: Document, key: Document): Promise<UpdateJob> {
    const { query, update, options } = mergeUpdate(spec, doc, key);
    return this.updateJob(evaluation, spec.database, spec.collection, query, update, {
      ...options,
      many: false,
      arrayFilters: undefined,
    });
  }

  /**
   * Results of a `$merge` in one write of the target: the documents their keys (or `_id`s) name
   * read once, each result decided over those of its key as they are by then (an earlier result
   * of the slice may have written one), on the main thread's slice. Answers how many results it
   * took: all, or those before one whose decision needs a worker (`outcome.elsewhere`).
   */
  private async mergeSlice(
    evaluation: Evaluation,
    spec: MergeSpec,
    docs: Document[],
    keys: Document[],
    outcome: MergeOutcome,
  ): Promise<number> {
    const { database, collection } = spec;
    const jobs: UpdateJob[] = [];
    for (const [i, doc] of docs.entries()) jobs.push(await this.mergeJob(evaluation, spec, doc, keys[i]!));
    const ids = docs.map((doc) => doc._id).filter((id) => id !== undefined);
    const prefilter = { $or: [mergeTargets(spec.on, keys), ...(ids.length > 0 ? [{ _id: { $in: ids } }] : [])] };
    return this.write(database, collection, async (view) => {
      const index = new MergeIndex(spec.on);
      for await (const batch of view.scan(prefilter)) for (const doc of batch) index.add(doc);
      const changes: DocumentChange[] = [];
      const events: (() => ChangeEvent[])[] = [];
      let taken = 0;
      for (; taken < docs.length; taken++) {
        const job = jobs[taken]!;
        const candidates = index.byKey(keys[taken]!);
        let decision: UpdateDecision;
        try {
          decision = withQueryLimits(
            this.limits,
            () => withCollation(this.collation, () => decideUpdate(job, candidates)),
            {
              deadline: evaluation.deadline,
              mainThread: true,
              now: this.now,
            },
          );
        } catch (error) {
          if (error instanceof NeedsWorker) {
            outcome.elsewhere = true;
            break;
          }
          const failure = mergeFailure(error);
          if (failure === error) mongoError(error);
          outcome.refused ??= failure;
          continue;
        }
        if (!this.mergeDecided(spec, keys[taken]!, decision, index, outcome)) continue;
        const plan = await this.planUpdate(database, collection, decision, candidates, job.options.replace);
        changes.push(...plan.changes);
        events.push(() => plan.events({ applied: plan.changes.length }));
        for (const change of plan.changes) if (change.op !== "delete") index.add(change.doc);
      }
      return {
        changes,
        // (A duplicate `_id` was refused above, with the documents read: every change applies.)
        events: () => events.flatMap((made) => made()),
        result: () => taken,
      };
    });
  }

  /**
   * What a `$merge` result's decision means for the batch: false when it writes nothing (a match
   * `whenMatched: "fail"` refuses, a new document whose `_id` the target holds, no match).
   */
  private mergeDecided(
    spec: MergeSpec,
    key: Document,
    decision: UpdateDecision,
    index: MergeIndex,
    outcome: MergeOutcome,
  ): boolean {
    if (decision.kind === "upsert") {
      if (!index.holdsId(decision.doc._id)) return true;
      outcome.refused ??= mergeFailure(
        errors.mongo(duplicateKeyText(spec.database, spec.collection, decision.doc._id)),
      );
      return false;
    }
    if (decision.matched === 0) outcome.unmatched = true;
    else if (spec.whenMatched === "fail") {
      outcome.refused ??= errors.mongo(mergeDuplicate(spec, key));
      return false;
    }
    return decision.changes.length > 0;
  }

  /** One `$merge` result through the update path (its decision in a worker when it needs one). */
  private async mergeOne(
    evaluation: Evaluation,
    spec: MergeSpec,
    doc: Document,
    key: Document,
    outcome: MergeOutcome,
  ): Promise<void> {
    const { query, update, options } = mergeUpdate(spec, doc, key);
    let result: UpdateResult;
    try {
      result = await this.update(evaluation, spec.database, spec.collection, query, update, {
        ...options,
        many: false,
        arrayFilters: undefined,
      });
    } catch (error) {
      const failure = mergeFailure(error);
      if (failure === error) throw error;
      outcome.refused ??= failure;
      return;
    }
    if (result.matched === 0 && result.upsertedId === undefined) outcome.unmatched = true;
    else if (result.matched > 0 && spec.whenMatched === "fail")
      outcome.refused ??= errors.mongo(mergeDuplicate(spec, key));
  }

  private async insert(database: string, name: string, documents: Document[]): Promise<unknown[]> {
    const allowed = this.rules.insert(this.principal, database, name);
    // A role that writes some fields only: a new document may hold no other (but the `_id` added here).
    const cuts = this.rules.writeCuts(this.principal, database, name, true);
    const writableFields = cuts ? fieldsOf(cuts) : undefined;
    // Prepared before the write, in slices (an insertMany of many documents lets other requests
    // run meanwhile): each document is this action's own copy from here on. The insert rule is the
    // app's own filter (not the caller's): it runs here, under the limits.
    const docs: Document[] = [];
    let refused: unknown = null;
    let insertable: ((doc: Document) => boolean) | undefined;
    const turns = new Turns();
    for (let from = 0; from < documents.length && !refused; from += insertSlice) {
      const slice = documents.slice(from, from + insertSlice);
      // A wide document is copied and sized in slices first (wide-values.ts).
      const wide = new Map<number, { copy: Document; size: number; generated: boolean }>();
      for (let i = 0; i < slice.length; i++) {
        if (!holdsWide(slice[i])) continue;
        const { copy, generated } = await cloneToInsert(slice[i]!, this.now);
        wide.set(i, { copy, generated, size: await documentSizeInSlices(copy) });
      }
      try {
        withQueryLimits(
          this.limits,
          () => {
            for (let i = 0; i < slice.length; i++) {
              const copied = wide.get(i);
              let doc = copied?.copy ?? cloneValue(slice[i]!);
              const refusal = idRefusal(doc);
              if (refusal !== null) {
                refused = errors.mongo(refusal);
                break;
              }
              // (Without an `_id` added here, which the caller does not write.)
              const written = writableFields ? keysOf(doc).slice(copied?.generated ? 1 : 0) : [];
              // MongoDB stores `_id` first, given or added (a wide copy is made so: cloneToInsert).
              if (!copied) doc = doc._id === undefined ? { _id: newDocumentId(this.now), ...doc } : idFirst(doc);
              // MongoDB's ordered insert: the documents before a refused one stay inserted.
              refused = copied ? tooLargeToInsert(copied.size) : documentTooLarge(doc);
              if (refused) break;
              if (allowed !== null) insertable ??= passesFor(allowed);
              const writable = writableFields?.(doc);
              if (insertable === undefined || !insertable(doc) || (writable && !insertsOnly(writable, doc, written))) {
                refused = errors.mongo("insert not permitted");
                break;
              }
              docs.push(doc);
            }
          },
          // (The insert rule's filter at the action's time too.)
          { now: this.now },
        );
      } catch (error) {
        mongoError(error);
      }
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
    if (applied.duplicateAt !== undefined)
      throw errors.mongo(duplicateKeyText(database, name, docs[applied.duplicateAt]!._id));
    if (refused) throw refused;
    return docs.map((d) => d._id);
  }

  /**
   * A write decided over the documents it reads: on the main thread within the store's write turn
   * when the decision fits the slice; else the turn ends without a change, a worker decides over
   * the documents read, and a new turn applies that decision if the documents are still the same
   * (else it decides again). A slow decision never holds the collection's other writers.
   */
  private async decided<D, T>(
    evaluation: Evaluation,
    database: string,
    name: string,
    prefilter: Document,
    targets: { sort: Document; many: boolean },
    job: UpdateJob | DeleteJob,
    apply: (decision: D, docs: Document[]) => WritePlan<T> | Promise<WritePlan<T>>,
  ): Promise<T> {
    let made: { decision: D; over: Document[] } | null = null;
    // Each turn reads the same documents again (as they are now): they are examined once.
    const examined = this.budget.examined;
    // A read that reached the documents the action may examine with batches unmatched: whether
    // they hold the target is the decision's to tell (outside the turn when it needs a worker), and
    // a decision that targets nothing there is the limit's error (a target may lie past it).
    const untargeted = (decision: D) => {
      if (job.kind === "delete") return (decision as number[]).length === 0;
      const update = decision as UpdateDecision;
      return update.kind === "upsert" || update.matched === 0;
    };
    const decide = (decision: D, docs: Document[], cut: boolean) => {
      if (cut && untargeted(decision)) throw errors.docsExaminedLimit(this.budget.maxExamined);
      return apply(decision, docs);
    };
    for (;;) {
      let read: Document[] = [];
      this.budget.examined = examined;
      const outcome = await this.write<T | typeof elsewhere>(database, name, async (view) => {
        let cut = false;
        const docs = await this.candidates(
          evaluation,
          this.reader(database, name, view),
          prefilter,
          targets.sort,
          targets.many ? undefined : 1,
          async () => {
            cut = true;
            return true;
          },
        );
        if (made !== null && sameDocuments(docs, made.over)) return decide(made.decision, docs, cut);
        const here = decideHere(evaluation, job, docs) as D | undefined;
        if (here !== undefined) return decide(here, docs, cut);
        read = docs;
        return nothing(elsewhere);
      });
      if (outcome !== elsewhere) return outcome as T;
      made = { decision: (await decideInWorker(evaluation, job, read)) as D, over: read };
    }
  }

  private async update(
    evaluation: Evaluation,
    database: string,
    name: string,
    query: Document,
    spec: unknown,
    options: UpdateOptions & { arrayFilters: unknown },
    beforeWrite?: (target: Document) => void,
    /** A `findOneAnd…`: it matches only documents the caller may read too (a find is a read). */
    readable = false,
  ): Promise<UpdateResult> {
    const job = await this.updateJob(evaluation, database, name, query, spec, options);
    if (readable) job.all = this.readableOnly(database, name, job.all);
    const targets = { sort: options.sort ?? {}, many: options.many };
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.decided(
        evaluation,
        database,
        name,
        job.all,
        targets,
        job,
        (decision: UpdateDecision, docs) => {
          const target = decision.kind === "update" ? decision.changes[0] : undefined;
          if (beforeWrite && target) beforeWrite(docs[target.index]!);
          return this.planUpdate(database, name, decision, docs, options.replace);
        },
      );
      if (outcome.duplicate === undefined) return outcome.result;
      // An upsert whose query names its `_id` by equality met the document another write inserted
      // meanwhile (on another instance, or between this one's read and insert): MongoDB tries it
      // again (4.2+, SERVER-14322), and now it matches that document.
      if (attempt < maxUpsertAttempts && equalityOnId(query)) continue;
      throw errors.mongo(duplicateKeyText(database, name, outcome.duplicate));
    }
  }

  /** An update's job, its arguments checked and the caller's rules taken in, as the update is decided. */
  private async updateJob(
    evaluation: Evaluation,
    database: string,
    name: string,
    query: Document,
    spec: unknown,
    options: UpdateOptions & { arrayFilters: unknown },
  ): Promise<UpdateJob> {
    if (!isDocument(spec) && !(Array.isArray(spec) && spec.every(isDocument)))
      throw errors.mongo("'update' must be a document");
    if (options.replace) {
      if (!isDocument(spec) || hasOperators(spec))
        throw errors.mongo("the replace operation document must not contain atomic operators");
    } else if (Array.isArray(spec)) {
      // (A pipeline too large to look at here is checked where it runs: decideUpdate.)
      this.checkHere(evaluation, spec, "update", () => checkUpdatePipeline(spec as Document[]));
    } else {
      await inTurns(updateOperatorChecks(spec, options.arrayFilters));
    }
    const writeFilter = this.rules.write(this.principal, database, name);
    const insertFilter = options.upsert ? this.rules.insert(this.principal, database, name) : null;
    // A role that inserts but does not write may still upsert: a query that matches no document
    // inserts one, a query that matches any is refused (decideUpdate).
    if (writeFilter === null && insertFilter === null) throw errors.mongo("update not permitted");
    this.checkQuery(evaluation, query);
    const all = writeFilter === null ? query : narrow(query, writeFilter);
    const { arrayFilters, ...rest } = options;
    const writeCuts = this.rules.writeCuts(this.principal, database, name);
    const insertCuts = options.upsert ? this.rules.writeCuts(this.principal, database, name, true) : undefined;
    return {
      kind: "update",
      all,
      query,
      spec: spec as UpdateSpec,
      writeFilter,
      insertFilter,
      ...(writeCuts ? { writeCuts } : {}),
      ...(insertCuts ? { insertCuts } : {}),
      ...(Array.isArray(arrayFilters) && arrayFilters.length > 0 ? { arrayFilters: arrayFilters as Document[] } : {}),
      options: rest,
    };
  }

  /**
   * The changes, events and result of an update's decision over the documents it read; the copies
   * of a wide document made in slices, and its changed fields named in turns.
   */
  private async planUpdate(
    database: string,
    name: string,
    decision: UpdateDecision,
    docs: Document[],
    replace: boolean,
  ): Promise<WritePlan<{ result: UpdateResult; duplicate?: unknown }>> {
    if (decision.kind === "upsert") {
      const inserted = decision.doc;
      const wide = holdsWide(inserted) ? [await cloneInSlices(inserted), await cloneInSlices(inserted)] : null;
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
                  fullDocument: wide?.[0] ?? cloneValue(inserted),
                },
              ]
            : [],
        result: (applied) =>
          applied.duplicateAt !== undefined
            ? { result: { matched: 0, modified: 0 }, duplicate: inserted._id }
            : {
                result: { matched: 0, modified: 0, upsertedId: inserted._id, after: wide?.[1] ?? cloneValue(inserted) },
              },
      };
    }
    if (decision.matched === 0) return nothing({ result: { matched: 0, modified: 0 } });
    const changes: DocumentChange[] = [];
    const events: ChangeEvent[] = [];
    // The document before the change, for the database triggers that ask for it (stored documents
    // are replaced, never edited: the one read stays as it was).
    const withBefore = wantsDocumentBefore(this.app.config.triggers, database, name);
    const turns = new Turns();
    for (const { index, after, paths, truncated } of decision.changes) {
      if (paths.length === 0 && !truncated?.length) continue;
      changes.push({ op: "replace", doc: after });
      const before = withBefore ? { before: await copyOf(docs[index]!) } : {};
      // (A pipeline's change MongoDB writes whole is a replacement in the stream too.)
      if (replace || paths[0] === "*") {
        events.push({
          database,
          collection: name,
          operationType: "replace",
          documentKey: { _id: after._id },
          fullDocument: await copyOf(after),
          ...before,
        });
        continue;
      }
      const updatedFields: Document = {};
      // Its keys, kept when it is wide (wide-keys.ts), as every later walk of the event lists them:
      // unkept, each listing of 200,000 was one step of ~50 ms.
      let updatedKeys: string[] | null = [];
      const removedFields: string[] = [];
      for (let i = 0; i < paths.length; i++) {
        const path = paths[i]!;
        const value = path
          .split(".")
          .reduce<unknown>((v, k) => (isDocument(v) || Array.isArray(v) ? (v as Document)[k] : undefined), after);
        if (value === undefined) removedFields.push(path);
        else {
          if (updatedKeys !== null && !Object.hasOwn(updatedFields, path))
            if (isIndexKey(path)) updatedKeys = null;
            else updatedKeys.push(path);
          updatedFields[path] = await copyOf(value);
        }
        if ((i & 255) === 255) await turns.maybe();
      }
      if (updatedKeys !== null) keepKeys(updatedFields, updatedKeys);
      events.push({
        database,
        collection: name,
        operationType: "update",
        documentKey: { _id: after._id },
        fullDocument: await copyOf(after),
        updateDescription: { updatedFields, removedFields, truncatedArrays: truncated ?? [] },
        ...before,
      });
    }
    const first = decision.changes[0]!;
    const result: UpdateResult = {
      matched: decision.matched,
      modified: changes.length,
      before: await copyOf(docs[first.index]!),
      after: await copyOf(first.after),
    };
    return { changes, events: () => events, result: () => ({ result }) };
  }

  private async delete(
    evaluation: Evaluation,
    database: string,
    name: string,
    query: Document,
    many: boolean,
    sort: Document | undefined,
    beforeWrite?: (target: Document) => void,
    /** A `findOneAndDelete`: it matches only documents the caller may read too. */
    readable = false,
  ): Promise<Document[]> {
    const deleteFilter = this.rules.delete(this.principal, database, name);
    if (deleteFilter === null) throw errors.mongo("delete not permitted");
    this.checkQuery(evaluation, query);
    const writable = narrow(query, deleteFilter);
    const all = readable ? this.readableOnly(database, name, writable) : writable;
    const job: DeleteJob = { kind: "delete", all, many, ...(sort ? { sort } : {}) };
    const targets = { sort: sort ?? {}, many };
    return this.decided(evaluation, database, name, all, targets, job, async (indices: number[], docs) => {
      const targets: Document[] = [];
      const turns = new Turns();
      if (beforeWrite) for (const i of indices) beforeWrite(docs[i]!);
      for (const i of indices) {
        targets.push(await copyOf(docs[i]!));
        await turns.maybe();
      }
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

/**
 * Batches in a row whose match ran out of the main thread's time before a read stops matching
 * batches itself (a busy machine shortens a slice now and then; a query that needs more every time
 * is the worker's).
 */
const sliceMisses = 3;

/** Reads a collection's documents that may match a prefilter, in batches (the store's or a write's view's scan). */
type Reader = (prefilter: Document, options: ScanOptions) => AsyncIterable<Document[]>;

/** Documents an insert prepares (copy, size, insert rule) between two looks at whether others wait. */
const insertSlice = 32;

/** The longest `maxTimeMS` an aggregation takes: the service's longest function run. */
const maxOwnTimeLimitMs = 300_000;

/**
 * A function's aggregation's `maxTimeMS`, as MongoDB reads it (a number of milliseconds, none at
 * 0): its time limit instead of the app's query time limit, up to five minutes; undefined for
 * other actions, for a client's (the SDKs send none) and when none is given.
 */
function ownTimeLimit(action: string, args: Document, fromFunction: boolean): number | undefined {
  const value = args.maxTimeMS;
  if (action !== "aggregate" || !fromFunction || value === undefined || value === null) return undefined;
  if (!isNumeric(value))
    throw errors.mongo(
      `BSON field 'aggregate.maxTimeMS' is the wrong type '${bsonTypeAlias(value)}', expected types '[long, int, decimal, double]'`,
    );
  const ms = doubleOf(value);
  if (Number.isNaN(ms) || ms < 0)
    throw errors.mongo(`BSON field 'aggregate.maxTimeMS' value must be >= 0, actual value '${shellText(value)}'`);
  return ms === 0 ? undefined : Math.min(ms, maxOwnTimeLimitMs);
}

/** Results of a `$merge` one write of the store takes at most. */
const mergeSlice = 1_000;

/** How a `$merge`'s batch went: its first refusal, whether a result matched nothing, whether one needs a worker. */
interface MergeOutcome {
  refused?: unknown;
  unmatched: boolean;
  elsewhere?: boolean;
}

/** An insert's duplicate `_id`, in the service's words. */
function duplicateKeyText(database: string, name: string, id: unknown): string {
  return duplicateKey(`${database}.${name}`, "_id_", { _id: id });
}

/** A plan that changes nothing. */
function nothing<T>(result: T): WritePlan<T> {
  return { changes: [], events: () => [], result: () => result };
}
