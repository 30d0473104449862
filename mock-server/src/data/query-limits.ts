/**
 * The deadline and memory ceiling every query, update, aggregation and stream filter runs under,
 * and the smaller share of them an evaluation gets on the main thread.
 *
 * The budget is cooperative: the query engine (query-engine.ts) counts a step for every operator it
 * evaluates and every document a stage emits, charges the arrays and strings operators build, checks
 * the logical size (bson-size.ts) of every value an operator or a stage builds, and weighs the work
 * of operators whose cost grows faster than their inputs before they start it; past the deadline or
 * the ceiling it throws the documented error, which unwinds the whole evaluation.
 *
 * On the main thread an evaluation first runs under a **slice**: a few milliseconds, a small
 * ceiling and a small share of heavy work. Past any of them it throws `NeedsWorker`, and the caller
 * runs the work again in a worker thread (query-workers.ts) under the whole budget and a hard
 * timeout. See docs/decisions/0006-query-limits.md and
 * docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { ObjectId } from "bson";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { bsonSize, type SizeCache } from "./bson-size.ts";

/** How long one MongoDB action (or one stream event's filter) may run. */
export const defaultQueryTimeoutMs = 2_000;
/** What one action's operators may build in total (MongoDB's 100 MB per-stage limit). */
export const defaultQueryMemoryLimitBytes = 100 * 1024 * 1024;

export interface QueryLimits {
  timeoutMs: number;
  memoryLimitBytes: number;
}

export const defaultQueryLimits: QueryLimits = {
  timeoutMs: defaultQueryTimeoutMs,
  memoryLimitBytes: defaultQueryMemoryLimitBytes,
};

/**
 * What an evaluation may use on the main thread before it moves to a worker: wall time (`ms` once
 * it has taken `steps` steps — a machine too busy to schedule it does not move a small query — and
 * `maxMs` whatever), bytes built (and the logical size of any one value or input document), and
 * heavy work (units of about one comparison) in one operator.
 */
export const mainThreadSlice = {
  ms: 5,
  steps: 4_096,
  maxMs: 50,
  bytes: 1024 * 1024,
  valueBytes: 64 * 1024,
  heavyUnits: 200_000,
} as const;

/**
 * Work too large for the main thread's slice: the caller runs it again in a worker. (Internal: it
 * never reaches a client.)
 */
export class NeedsWorker extends Error {
  constructor(readonly why: string) {
    super(`needs a worker: ${why}`);
  }
}

/** Steps between two looks at the clock (a look costs ~30–90 ns; a step is one operator call). */
const checkEvery = 64;
/** On the main thread the clock is read more often: its slice is short and one step may be heavy. */
const mainCheckEvery = 16;

class Budget {
  steps = 0;
  nextCheck: number;
  bytes = 0;
  /** Sizes of values built during this evaluation (bson-size.ts). */
  readonly sizes: SizeCache = new WeakMap();
  /** The slice's end (main thread), else the deadline. */
  readonly stopAt: number;
  /** The main thread's slice's end however few steps were taken. */
  readonly hardStopAt: number;
  readonly byteCeiling: number;
  readonly valueCeiling: number;
  readonly heavyCeiling: number;
  /** Composite group keys hashed so far (engine-guards.ts). */
  compositeKeys = 0;
  /** Why the budget stopped (every later step throws the same). */
  spent: Error | null = null;
  constructor(
    readonly deadline: number,
    readonly memoryLimitBytes: number,
    readonly onMainThread: boolean,
    /** The app's time of the action (epoch ms) where its clock is not the real one (`actionTime`). */
    readonly appTime: number | undefined,
  ) {
    this.checkEvery = onMainThread ? mainCheckEvery : checkEvery;
    this.nextCheck = this.checkEvery;
    const now = performance.now();
    this.stopAt = onMainThread ? Math.min(deadline, now + mainThreadSlice.ms) : deadline;
    this.hardStopAt = onMainThread ? Math.min(deadline, now + mainThreadSlice.maxMs) : deadline;
    this.byteCeiling = onMainThread ? Math.min(memoryLimitBytes, mainThreadSlice.bytes) : memoryLimitBytes;
    this.valueCeiling = onMainThread ? Math.min(memoryLimitBytes, mainThreadSlice.valueBytes) : memoryLimitBytes;
    this.heavyCeiling = onMainThread ? mainThreadSlice.heavyUnits : Number.POSITIVE_INFINITY;
  }
  readonly checkEvery: number;
}

let active: Budget | null = null;

export interface LimitOptions {
  /** When the action started (`performance.now()` based): its reading counts against its time too. */
  deadline?: number;
  /** Run under the main thread's slice (throws `NeedsWorker` past it). */
  mainThread?: boolean;
  /**
   * The app's time of the action (epoch ms), where the app's clock has been moved off the real
   * one (the control API's): the time of its `$currentDate`, `$$NOW` and new `_id`s.
   */
  now?: number | undefined;
}

/**
 * Runs `fn` under a budget. Nested calls (a `$lookup`'s sub-pipeline, a function's action inside
 * another) share the outer budget.
 */
export function withQueryLimits<T>(limits: QueryLimits, fn: () => T, options: LimitOptions = {}): T {
  if (active !== null) return fn();
  active = new Budget(
    options.deadline ?? performance.now() + limits.timeoutMs,
    limits.memoryLimitBytes,
    options.mainThread === true,
    options.now,
  );
  try {
    return fn();
  } finally {
    active = null;
  }
}

/**
 * The app's time of the evaluation running now, where its clock has been moved off the real one
 * (LimitOptions.now); undefined where it has not (real time: what the engine's own clock says).
 */
export function actionTime(): number | undefined {
  return active?.appTime;
}

/** Epoch milliseconds as the evaluation running now sees them: the app's clock's (actionTime), else the real. */
export const evaluationNow = (): number => active?.appTime ?? Date.now();

/** A new ObjectId for a document the database adds one to: of the app's time (actionTime), else the real. */
export function newDocumentId(now = actionTime()): ObjectId {
  return now === undefined ? new ObjectId() : new ObjectId(ObjectId.generate(Math.floor(now / 1000)));
}

/** Whether an evaluation is running on the main thread's slice now. */
export function onMainThreadSlice(): boolean {
  return active?.onMainThread === true;
}

function stop(budget: Budget, error: Error): never {
  // Spent: make every later step throw too, so nothing that catches and carries on escapes.
  budget.spent = error;
  budget.nextCheck = budget.steps;
  throw error;
}

function checkClock(budget: Budget): void {
  if (budget.spent) throw budget.spent;
  budget.nextCheck = budget.steps + budget.checkEvery;
  const now = performance.now();
  if (now <= budget.stopAt) return;
  if (now > budget.deadline) stop(budget, errors.queryTimeLimit());
  if (budget.steps >= mainThreadSlice.steps || now > budget.hardStopAt) stop(budget, new NeedsWorker("time"));
}

/** One unit of work (an operator call, a document through a stage). */
export function step(): void {
  const budget = active;
  if (budget !== null && ++budget.steps >= budget.nextCheck) checkClock(budget);
}

/** `n` units of work at once (a regular expression over a long input, a large sort). */
export function steps(n: number): void {
  const budget = active;
  if (budget === null) return;
  budget.steps += n;
  if (budget.steps >= budget.nextCheck) checkClock(budget);
}

/**
 * Work of `units` (about one comparison each) an operator is about to do in one go (a sort, a set
 * of documents, a join): on the main thread more than its share moves the evaluation to a worker
 * before the work starts; in a worker it counts as steps.
 */
export function heavy(units: number, operator: string): void {
  const budget = active;
  if (budget === null) return;
  if (budget.spent) throw budget.spent;
  if (units > budget.heavyCeiling) stop(budget, new NeedsWorker(`${operator} over ${Math.round(units)} units`));
  steps(units);
}

/** Charges `bytes` that `operator` builds; throws once the action's total passes the ceiling. */
export function charge(bytes: number, operator: string): void {
  const budget = active;
  if (budget === null) return;
  budget.bytes += bytes;
  if (budget.bytes > budget.byteCeiling) {
    if (budget.onMainThread && budget.bytes <= budget.memoryLimitBytes)
      stop(budget, new NeedsWorker(`${operator} memory`));
    stop(budget, errors.queryMemoryLimit(operator, budget.memoryLimitBytes));
  }
}

/** Refuses before building: throws when `bytes` more would pass the ceiling (charges nothing). */
export function precheck(bytes: number, operator: string): void {
  const budget = active;
  if (budget === null || budget.bytes + bytes <= budget.byteCeiling) return;
  if (budget.onMainThread && budget.bytes + bytes <= budget.memoryLimitBytes)
    stop(budget, new NeedsWorker(`${operator} memory`));
  stop(budget, errors.queryMemoryLimit(operator, budget.memoryLimitBytes));
}

/**
 * Checks the logical size of a value `operator` built (or received, for an input): past the
 * ceiling it is refused before anything compares, hashes, copies or writes it. Answers the size.
 */
export function checkValue(value: unknown, operator: string): number {
  const budget = active;
  if (budget === null || value === null || typeof value !== "object") return 0;
  // The walk stops at the ceiling: sizing costs at most what the ceiling allows.
  const size = bsonSize(value, budget.sizes, budget.valueCeiling);
  if (size > budget.valueCeiling) {
    if (budget.valueCeiling < budget.memoryLimitBytes)
      stop(budget, new NeedsWorker(`${operator} builds a large value`));
    stop(budget, errors.queryMemoryLimit(operator, budget.memoryLimitBytes));
  }
  return size;
}

/** The logical size of a value under the active budget's cache (a cache of its own without one). */
export function logicalSize(value: unknown, limit?: number): number {
  return bsonSize(value, active?.sizes ?? new WeakMap(), limit);
}

/** Counts one more composite group key in this evaluation; answers how many so far. */
export function countCompositeKey(): number {
  return active === null ? 0 : ++active.compositeKeys;
}

/** The estimated size of a value an operator returns: 8 bytes an array element, 2 a character. */
export function estimateBytes(value: unknown): number {
  if (typeof value === "string") return value.length * 2;
  if (Array.isArray(value)) return value.length * 8;
  return 0;
}

export function queryLimitsOf(config: { queryTimeoutMs?: number; queryMemoryLimitBytes?: number }): QueryLimits {
  return {
    timeoutMs: config.queryTimeoutMs ?? defaultQueryTimeoutMs,
    memoryLimitBytes: config.queryMemoryLimitBytes ?? defaultQueryMemoryLimitBytes,
  };
}
