/**
 * The deadline and memory ceiling every query, update, aggregation and stream filter runs under.
 * Queries run synchronously on the main thread, so the budget is cooperative: the query engine
 * (query-engine.ts) counts a step for every operator it evaluates and every document a stage
 * emits, and charges the arrays and strings operators build; past the deadline or the ceiling it
 * throws the documented error, which unwinds the whole evaluation. See
 * docs/decisions/0006-query-limits.md.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";

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

/** Steps between two looks at the clock (a look costs ~30 ns; a step is one operator call). */
const checkEvery = 64;

class Budget {
  steps = 0;
  nextCheck = checkEvery;
  bytes = 0;
  constructor(
    readonly deadline: number,
    readonly memoryLimitBytes: number,
  ) {}
}

let active: Budget | null = null;

/**
 * Runs `fn` under a budget. Nested calls (a `$lookup`'s sub-pipeline, a function's action inside
 * another) share the outer budget. An action that reads before it decides passes the deadline it
 * set when it started (`performance.now()` based), so the reading counts against its time too.
 */
export function withQueryLimits<T>(
  limits: QueryLimits,
  fn: () => T,
  deadline: number = performance.now() + limits.timeoutMs,
): T {
  if (active !== null) return fn();
  active = new Budget(deadline, limits.memoryLimitBytes);
  try {
    return fn();
  } finally {
    active = null;
  }
}

function checkClock(budget: Budget): void {
  budget.nextCheck = budget.steps + checkEvery;
  if (performance.now() > budget.deadline) {
    // Spent: make every later step throw too, so nothing that catches and carries on escapes.
    budget.nextCheck = budget.steps;
    throw errors.queryTimeLimit();
  }
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

/** Charges `bytes` that `operator` builds; throws once the action's total passes the ceiling. */
export function charge(bytes: number, operator: string): void {
  const budget = active;
  if (budget === null) return;
  budget.bytes += bytes;
  if (budget.bytes > budget.memoryLimitBytes) throw errors.queryMemoryLimit(operator, budget.memoryLimitBytes);
}

/** Refuses before building: throws when `bytes` more would pass the ceiling (charges nothing). */
export function precheck(bytes: number, operator: string): void {
  const budget = active;
  if (budget !== null && budget.bytes + bytes > budget.memoryLimitBytes)
    throw errors.queryMemoryLimit(operator, budget.memoryLimitBytes);
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
