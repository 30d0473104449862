/**
 * Where an evaluation runs: first on the main thread, under its slice (query-limits.ts); when it
 * does not fit, in a query worker (query-workers.ts) under the whole budget and a hard timeout.
 * A lane (an app's user) that overran its slice three times in a second, and has work in the
 * workers, sends its evaluations there at once: a burst of slow requests costs the main thread a
 * few slices, not one each. See
 * docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import { type CollationSpec, withCollation } from "./collation.ts";
import { type Document, toEJSONText } from "./documents.ts";
import { fromEJSONTextInSlices } from "./ejson-in-slices.ts";
import { maxReplyBytes, replyText } from "./ejson-text.ts";
import {
  type MatchJob,
  mongoError,
  type ReadJob,
  runRead,
  runWrite,
  type UpdateDecision,
  type WriteJob,
} from "./query-jobs.ts";
import { NeedsWorker, type QueryLimits, withQueryLimits } from "./query-limits.ts";
import { queryWorkers, unwrap, type WorkerMessage } from "./query-workers.ts";
import { takeTurn } from "./turns.ts";
import { holdsWide, textInSlices } from "./wide-values.ts";

/**
 * Overruns of the main thread's slice per lane in the current second: past `overrunsPerSecond`, and
 * while the lane has work in the workers, its evaluations go straight there. A burst of slow
 * requests costs the main thread a few slices, not one each; a query that overran by chance (a
 * pause for garbage collection) moves nothing else, and neither does one after the burst.
 */
const overrunsPerSecond = 3;
const overruns = new Map<string, { since: number; count: number }>();

function overran(lane: string): void {
  const now = performance.now();
  const seen = overruns.get(lane);
  if (seen && now - seen.since < 1_000) {
    seen.count++;
    return;
  }
  if (overruns.size > 10_000) {
    for (const [key, at] of overruns) if (now - at.since >= 1_000) overruns.delete(key);
  }
  overruns.set(lane, { since: now, count: 1 });
}

/** Jobs each lane has in the workers now (being prepared, waiting or running). */
const inWorkers = new Map<string, number>();

function overrunning(lane: string): boolean {
  if (!inWorkers.has(lane)) return false;
  const seen = overruns.get(lane);
  return seen !== undefined && seen.count >= overrunsPerSecond && performance.now() - seen.since < 1_000;
}

/** One action's evaluation settings: its limits, its deadline and its lane. */
export interface Evaluation {
  limits: QueryLimits;
  /** performance.now() based. */
  deadline: number;
  /** `appId:userId` (or `appId:system`): whose turn it is in the workers' queue. */
  lane: string;
  /** The lane's group in that queue: its app's client address (`laneGroup`); the lane itself when absent. */
  group?: string;
  /** The action, for the memory-limit error of a worker that ran out of heap. */
  operator: string;
  /** The action's collation (a system function's `collation` option): strings compare by it. */
  collation?: CollationSpec;
  /** The app's time of the action, where its clock has been moved off the real one (query-limits.ts LimitOptions.now). */
  now?: number;
}

/**
 * The group of a lane of `appId` in the workers' queue: the client address its work comes from
 * (an address key: http/client-address.ts), whatever its users; without one, the lane alone.
 */
export function laneGroup(appId: string, address: string | undefined): string | undefined {
  return address === undefined ? undefined : `${appId}:address:${address}`;
}

const offloaded = Symbol("offloaded");

/** `fn` on the main thread's slice, or `offloaded` when it does not fit (or its lane overran lately). */
function onMainThread<T>(evaluation: Evaluation, fn: () => T): T | typeof offloaded {
  if (overrunning(evaluation.lane)) return offloaded;
  try {
    return withQueryLimits(evaluation.limits, () => withCollation(evaluation.collation, fn), {
      deadline: evaluation.deadline,
      mainThread: true,
      now: evaluation.now,
    });
  } catch (error) {
    if (!(error instanceof NeedsWorker)) mongoError(error);
    overran(evaluation.lane);
    return offloaded;
  }
}

/** How long the main thread prepares documents for a worker before it lets other requests in. */
const writeSliceMs = 2;

const encoder = new TextEncoder();

/**
 * Documents as the workers read them: one Extended JSON array in UTF-8 bytes, handed over without a
 * copy (a stored document's kept text is joined, not written). Written a slice at a time, so other
 * requests are served in between however many (or large) the documents.
 */
async function documentsBytes(docs: Document[], deadline: number): Promise<Uint8Array> {
  const texts = new Array<string>(docs.length);
  let bytes = 2 + Math.max(0, docs.length - 1);
  let started = performance.now();
  for (let i = 0; i < docs.length; i++) {
    // (A wide document's text is written in slices of its own: wide-values.ts.)
    texts[i] = holdsWide(docs[i]) ? await textInSlices(docs[i]) : toEJSONText(docs[i]);
    bytes += Buffer.byteLength(texts[i]!);
    if (performance.now() - started > writeSliceMs) {
      if (performance.now() > deadline) throw errors.queryTimeLimit();
      await takeTurn();
      started = performance.now();
    }
  }
  const out = new Uint8Array(bytes);
  let at = 0;
  out[at++] = 0x5b; // [
  for (let i = 0; i < texts.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    at += encoder.encodeInto(texts[i]!, out.subarray(at)).written;
    if (performance.now() - started > writeSliceMs) {
      await takeTurn();
      started = performance.now();
    }
  }
  out[at] = 0x5d; // ]
  return out;
}

/** Work for a worker, as the main thread has it. */
type WorkerWork =
  | { kind: "read"; job: unknown; docs: Document[]; others: Record<string, Document[]> }
  | { kind: "write"; job: unknown; docs: Document[] }
  | { kind: "match"; job: unknown; docs: Document[] };

async function inWorker(evaluation: Evaluation, request: WorkerWork): Promise<string | boolean> {
  const lane = evaluation.lane;
  inWorkers.set(lane, (inWorkers.get(lane) ?? 0) + 1);
  try {
    return await sendToWorker(evaluation, request);
  } finally {
    const left = (inWorkers.get(lane) ?? 1) - 1;
    if (left > 0) inWorkers.set(lane, left);
    else inWorkers.delete(lane);
  }
}

async function sendToWorker(evaluation: Evaluation, request: WorkerWork): Promise<string | boolean> {
  const base = {
    // (A wide query's text is written in slices: wide-values.ts.)
    job: holdsWide(request.job) ? await textInSlices(request.job) : toEJSONText(request.job),
    docs: await documentsBytes(request.docs, evaluation.deadline),
    memoryLimitBytes: evaluation.limits.memoryLimitBytes,
    ...(evaluation.collation ? { collation: evaluation.collation } : {}),
    ...(evaluation.now !== undefined ? { now: evaluation.now } : {}),
  };
  let message: WorkerMessage;
  if (request.kind === "read") {
    const others: Record<string, Uint8Array> = {};
    for (const [name, docs] of Object.entries(request.others))
      others[name] = await documentsBytes(docs, evaluation.deadline);
    message = { ...base, kind: "read", others };
  } else {
    message = { ...base, kind: request.kind };
  }
  const lane = { lane: evaluation.lane, group: evaluation.group ?? evaluation.lane };
  return unwrap(await queryWorkers.run(lane, message, evaluation.deadline, evaluation.operator));
}

/** Replies are capped at MongoDB's largest (their writing is part of the budget: on the main thread, of its slice). */
const replyLimits = { capBytes: maxReplyBytes, onTooLarge: errors.replyTooLarge };

/** A read's reply as canonical Extended JSON text (capped at MongoDB's largest reply). */
export async function readText(
  evaluation: Evaluation,
  job: ReadJob,
  docs: Document[],
  others: Record<string, Document[]> = {},
): Promise<string> {
  const here = onMainThread(evaluation, () => replyText(runRead(job, docs, others), replyLimits));
  if (here !== offloaded) return here;
  return (await inWorker(evaluation, { kind: "read", job, docs, others })) as string;
}

/** A read's reply as a value (the control API's callers). */
export async function readValue(
  evaluation: Evaluation,
  job: ReadJob,
  docs: Document[],
  others: Record<string, Document[]> = {},
): Promise<unknown> {
  const here = onMainThread(evaluation, () => runRead(job, docs, others));
  if (here !== offloaded) return here;
  return fromEJSONTextInSlices((await inWorker(evaluation, { kind: "read", job, docs, others })) as string);
}

/** A write's decision, on the main thread only (`undefined` when it needs a worker). */
export function decideHere(
  evaluation: Evaluation,
  job: WriteJob,
  docs: Document[],
): UpdateDecision | number[] | undefined {
  const here = onMainThread(evaluation, () => runWrite(job, docs));
  return here === offloaded ? undefined : here;
}

/** A write's decision, in a worker. */
export async function decideInWorker(
  evaluation: Evaluation,
  job: WriteJob,
  docs: Document[],
): Promise<UpdateDecision | number[]> {
  const text = (await inWorker(evaluation, { kind: "write", job, docs })) as string;
  return ((await fromEJSONTextInSlices(text)) as { decision: UpdateDecision | number[] }).decision;
}

/**
 * A stream's verdict on one change: `here` on the main thread's slice (compiled filters), else
 * `job` in a worker. `slow` (a stream whose filter moved once) goes to the worker at once.
 */
export async function matchChange(
  evaluation: Evaluation,
  here: (() => boolean) | null,
  job: MatchJob,
  event: Document,
  doc: Document | undefined,
): Promise<boolean> {
  if (here !== null) {
    const verdict = onMainThread(evaluation, here);
    if (verdict !== offloaded) return verdict;
  }
  return (await inWorker(evaluation, { kind: "match", job, docs: doc ? [event, doc] : [event] })) as boolean;
}
