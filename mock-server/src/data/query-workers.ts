/**
 * The query workers: a small pool of worker threads (one per spare core, two to four) that run
 * evaluations too large for the main thread's slice (query-jobs.ts in query-worker.ts), so no
 * request holds the event loop while one runs.
 *
 * - **Hard timeout.** A job gets the time left until its action's deadline; a worker that has not
 *   answered a little after it is terminated (whatever it was doing: a sort, a hash map, a copy)
 *   and the job answers MongoDB's time-limit error. A new worker takes its place.
 * - **Memory.** Each worker has a heap limit; a job that exhausts it ends its worker, not the
 *   emulator, and answers the memory-limit error.
 * - **Fairness.** Jobs wait in lanes, one per app and user, and lanes in groups, one per app and
 *   client address (whatever its users) or, without one, per lane. Groups are served in turn, and
 *   a group's lanes in turn; a group runs on all workers but one. So one user's many slow queries
 *   delay only that user's, one address's many users only that address's, and either leaves a
 *   worker to everyone else. A job whose deadline passes while it waits answers the time-limit
 *   error unrun.
 *
 * One pool per process (shared by every app, like the CPU it uses); workers start when jobs need
 * them (the first job's clock stands still meanwhile) and idle ones do not keep the process alive. See docs/decisions/0019-evaluation-off-the-main-thread.md.
 */

import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { AppServicesError, appServicesErrors as errors } from "../errors/catalogue.ts";
import type { CollationSpec } from "./collation.ts";

/**
 * What a worker is asked: a job (Extended JSON text) over documents (an Extended JSON array, as
 * UTF-8 bytes whose buffer is transferred, not copied).
 */
export type WorkerMessage = {
  job: string;
  docs: Uint8Array;
  memoryLimitBytes: number;
  /** The collation the job evaluates under (collation.ts), if any. */
  collation?: CollationSpec;
  /** The app's time of the action, where its clock is not the real one (query-limits.ts LimitOptions.now). */
  now?: number;
} & (
  | { kind: "read"; others: Record<string, Uint8Array> }
  | { kind: "write" }
  /** docs: the change event, then the document the read rule judges (if any). */
  | { kind: "match" }
);

/**
 * A message with its job's deadline as a moment every thread reads alike (`performance.timeOrigin +
 * performance.now()`): time spent in the queue or in a worker's start counts.
 */
export type WorkerRequest = WorkerMessage & { deadlineAt: number };

export type WorkerReply =
  | { ok: true; text: string }
  | { ok: true; verdict: boolean }
  | { ok: false; error: { status: number; message: string; code: string | undefined } };

/** How long past a job's deadline its worker may take to answer before it is terminated. */
export const hardTimeoutGraceMs = 50;
/** The longest a queued job's clock stands still while the pool starts. */
const maxStartMs = 10_000;
/** The heap each worker may use (a job past it ends its worker with the memory-limit error). */
export const workerHeapMb = 1536;

/**
 * Workers: one per spare core, two at least (one user's jobs run on all but one, so one user can
 * never hold them all) and four at most.
 */
const poolSize = Math.max(2, Math.min(4, availableParallelism() - 1));
/** Jobs of one group (and so of one lane) running at once. */
const perGroup = poolSize - 1;

/** Whose turn a job waits for: its lane (`appId:userId`), in its group (an app's client address, or the lane itself). */
export interface JobLane {
  lane: string;
  group: string;
}

interface Job extends JobLane {
  request: WorkerRequest;
  /** performance.now() past which the job answers the time-limit error. */
  deadline: number;
  queuedAt: number;
  memoryLimitBytes: number;
  operator: string;
  resolve(reply: WorkerReply): void;
  reject(error: Error): void;
  waiting: NodeJS.Timeout | null;
}

interface Slot {
  worker: Worker;
  /** Its code has loaded (it said so): only then does it take jobs. */
  ready: boolean;
  job: Job | null;
  id: number;
  timer: NodeJS.Timeout | null;
}

/** Where a worker's code comes from: the bundle's file beside it, or the sources bundled on first use. */
async function workerCode(): Promise<{ url: URL } | { code: string }> {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return { url: new URL("./query-worker.js", here) };
  // Running from the sources (tests, tsx): the worker's sources are bundled once, in memory.
  const esbuild = await import("esbuild");
  const result = await esbuild.build({
    entryPoints: [new URL("./query-worker.ts", here).pathname],
    bundle: true,
    write: false,
    platform: "node",
    format: "cjs",
    target: "node20",
    logLevel: "warning",
  });
  return { code: result.outputFiles[0]!.text };
}

class QueryWorkerPool {
  private readonly slots: Slot[] = [];
  /** Waiting jobs by group, then lane, each map in turn order (one served goes to the back). */
  private readonly groups = new Map<string, Map<string, Job[]>>();
  private nextId = 1;
  private code: Promise<{ url: URL } | { code: string }> | null = null;
  private starting = 0;
  /** A worker has been ready at least once (until then queued jobs' clocks stand still). */
  private started = false;
  private startedSince = 0;

  private readonly readyWaiters: (() => void)[] = [];

  /**
   * Starts the pool's workers and waits until each takes jobs (tests that time slow queries warm
   * it: a worker started only when a job needs it would spend that job's time starting, which on a
   * loaded machine can be its whole deadline).
   */
  async warm(): Promise<void> {
    for (;;) {
      while (this.slots.length + this.starting < poolSize) this.grow();
      if (this.slots.length === poolSize && this.slots.every((slot) => slot.ready)) break;
      await new Promise<void>((resolve) => {
        this.readyWaiters.push(resolve);
        this.refs();
      });
    }
    this.refs();
  }

  /** Jobs waiting and running (tests). */
  get jobs(): number {
    let n = this.slots.filter((s) => s.job !== null).length;
    for (const _ of this.waiting()) n++;
    return n;
  }

  /** Starts one more worker (it takes jobs when it says it is ready). */
  private grow(): void {
    if (this.slots.length + this.starting === 0) this.startedSince = performance.now();
    this.spawn().catch((error: Error) => this.failAll(errors.mongo(`the query could not be run: ${error.message}`)));
  }

  /** Workers keep the process alive while jobs (or `warm`) wait or run (an idle pool does not). */
  private refs(): void {
    const busy = this.groups.size > 0 || this.readyWaiters.length > 0 || this.slots.some((s) => s.job !== null);
    for (const slot of this.slots) {
      if (busy) slot.worker.ref();
      else slot.worker.unref();
    }
  }

  /** Runs a job in a worker; rejects with the documented error when it cannot answer in time. */
  run({ lane, group }: JobLane, request: WorkerMessage, deadline: number, operator: string): Promise<WorkerReply> {
    return new Promise((resolve, reject) => {
      const job: Job = {
        lane,
        group,
        request: { ...request, deadlineAt: performance.timeOrigin + deadline },
        deadline,
        queuedAt: performance.now(),
        memoryLimitBytes: request.memoryLimitBytes,
        operator,
        resolve,
        reject,
        waiting: null,
      };
      let lanes = this.groups.get(group);
      if (!lanes) {
        lanes = new Map();
        this.groups.set(group, lanes);
      }
      const queue = lanes.get(lane);
      if (queue) queue.push(job);
      else lanes.set(lane, [job]);
      if (this.started) this.arm(job);
      this.refs();
      this.dispatch();
    });
  }

  /** A queued job answers the time-limit error at its deadline unless a worker takes it first. */
  private arm(job: Job): void {
    if (job.waiting) clearTimeout(job.waiting);
    job.waiting = setTimeout(
      () => {
        const lanes = this.groups.get(job.group);
        const queue = lanes?.get(job.lane);
        const at = queue?.indexOf(job) ?? -1;
        if (at < 0) return;
        queue!.splice(at, 1);
        if (queue!.length === 0) lanes!.delete(job.lane);
        if (lanes!.size === 0) this.groups.delete(job.group);
        job.reject(errors.queryTimeLimit());
        this.refs();
      },
      Math.max(0, job.deadline - performance.now()),
    );
  }

  /**
   * The first worker is ready: jobs queued while the pool started get the time they waited back (up
   * to `maxStartMs`): a worker not existing yet is not the query's time.
   */
  private firstReady(): void {
    if (this.started) return;
    this.started = true;
    const now = performance.now();
    for (const job of this.waiting()) {
      const stood = Math.min(maxStartMs, now - Math.max(this.startedSince, job.queuedAt));
      job.deadline += stood;
      job.request.deadlineAt += stood;
      this.arm(job);
    }
  }

  /** Every waiting job. */
  private *waiting(): Generator<Job> {
    for (const lanes of this.groups.values()) for (const queue of lanes.values()) yield* queue;
  }

  /**
   * The next job: of the first group in turn with fewer than `perGroup` jobs running, from its
   * first lane in turn (a group, and a lane in it, goes to the back once served).
   */
  private next(): Job | undefined {
    const running = new Map<string, number>();
    for (const slot of this.slots) {
      if (slot.job) running.set(slot.job.group, (running.get(slot.job.group) ?? 0) + 1);
    }
    for (const [group, lanes] of this.groups) {
      if ((running.get(group) ?? 0) >= perGroup) continue;
      const [lane, queue] = lanes.entries().next().value as [string, Job[]];
      const job = queue.shift()!;
      lanes.delete(lane);
      if (queue.length > 0) lanes.set(lane, queue);
      this.groups.delete(group);
      if (lanes.size > 0) this.groups.set(group, lanes);
      return job;
    }
    return undefined;
  }

  private dispatch(): void {
    for (;;) {
      if (this.groups.size === 0) return;
      const slot = this.slots.find((s) => s.ready && s.job === null);
      if (!slot) {
        // Every worker busy: one more, up to the pool's size (it dispatches when it is ready).
        if (this.starting === 0 && this.slots.length < poolSize) this.grow();
        return;
      }
      const job = this.next();
      if (!job) return;
      if (job.waiting) clearTimeout(job.waiting);
      const left = job.deadline - performance.now();
      if (left <= 0) {
        job.reject(errors.queryTimeLimit());
        continue;
      }
      this.start(slot, job, left);
    }
  }

  private start(slot: Slot, job: Job, left: number): void {
    slot.job = job;
    slot.id = this.nextId++;
    slot.timer = setTimeout(() => {
      // The hard timeout: whatever the worker is doing, it ends.
      this.retire(slot, errors.queryTimeLimit());
    }, left + hardTimeoutGraceMs);
    const request = job.request;
    const buffers = [
      request.docs.buffer,
      ...("others" in request ? Object.values(request.others) : []).map((b) => b.buffer),
    ];
    slot.worker.postMessage({ id: slot.id, request }, buffers as ArrayBuffer[]);
  }

  private finish(slot: Slot, reply: WorkerReply): void {
    const job = slot.job;
    if (slot.timer) clearTimeout(slot.timer);
    slot.job = null;
    slot.timer = null;
    job?.resolve(reply);
    this.dispatch();
    this.refs();
  }

  /** Ends a worker (its job, if any, answers `error`); another starts when a job needs it. */
  private retire(slot: Slot, error: Error): void {
    const at = this.slots.indexOf(slot);
    if (at < 0) return;
    this.slots.splice(at, 1);
    if (slot.timer) clearTimeout(slot.timer);
    const job = slot.job;
    slot.job = null;
    void slot.worker.terminate();
    job?.reject(error);
    this.dispatch();
    this.refs();
  }

  private failAll(error: Error): void {
    for (const job of this.waiting()) {
      if (job.waiting) clearTimeout(job.waiting);
      job.reject(error);
    }
    this.groups.clear();
  }

  private async spawn(): Promise<Slot> {
    this.starting++;
    try {
      this.code ??= workerCode();
      const code = await this.code;
      const options = { resourceLimits: { maxOldGenerationSizeMb: workerHeapMb } };
      const worker = "url" in code ? new Worker(code.url, options) : new Worker(code.code, { ...options, eval: true });
      const slot: Slot = { worker, ready: false, job: null, id: 0, timer: null };
      worker.on("message", (message: { id: number; reply: WorkerReply } | "ready") => {
        if (message === "ready") {
          slot.ready = true;
          this.firstReady();
          for (const resolve of this.readyWaiters.splice(0)) resolve();
          this.dispatch();
        } else if (slot.job !== null && message.id === slot.id) this.finish(slot, message.reply);
      });
      worker.on("error", (error: Error & { code?: string }) => {
        const job = slot.job;
        this.retire(
          slot,
          error.code === "ERR_WORKER_OUT_OF_MEMORY" && job
            ? errors.queryMemoryLimit(job.operator, job.memoryLimitBytes)
            : errors.mongo(`the query could not be run: ${error.message}`),
        );
      });
      worker.on("exit", () => this.retire(slot, errors.queryTimeLimit()));
      this.slots.push(slot);
      // Idle workers do not keep the process alive (after the listeners: adding one refs again).
      this.refs();
      return slot;
    } finally {
      this.starting--;
    }
  }
}

export const queryWorkers = new QueryWorkerPool();

/** A worker's answer as the action's: its text or verdict, or its error thrown. */
export function unwrap(reply: WorkerReply): string | boolean {
  if (!reply.ok) throw new AppServicesError(reply.error.status, reply.error.message, reply.error.code);
  return "text" in reply ? reply.text : reply.verdict;
}
