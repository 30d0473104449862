/**
 * One app's function runner on the emulator's side: a worker thread holding the app's `node:vm`
 * context (see function-worker.ts and sandbox-bootstrap.ts). Calls cross as text; the worker never
 * blocks the emulator. At a call's deadline the call fails; if the worker does not answer a ping
 * at once it is stuck (a busy loop, an endless promise chain) and is terminated, failing its other
 * calls too, and the app gets a fresh worker on its next call. Memory is capped like the service's
 * 350 MB per function run.
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import type { FunctionSource } from "./function-folder.ts";
import { workerSource } from "./function-worker.ts";
import { bootstrapSource, factoryBody, factoryParameters } from "./sandbox-bootstrap.ts";

const require = createRequire(import.meta.url);
// The browser build of the BSON library (an IIFE defining `BSON`), beside the package's main file.
const bsonBundlePath = join(dirname(require.resolve("bson")), "bson.bundle.js");

/** How long a worker may take to answer a ping before it counts as stuck. */
const pingGraceMs = 250;

export class ExecutionTimeout extends Error {}
export class ExecutionMemoryLimit extends Error {}

/** What the emulator offers functions (everything as text). */
export interface SandboxHost {
  /** A function call asks for a MongoDB action or another function; answer with `deliver`. */
  request(sandbox: Sandbox, callId: number, pendingId: number, kind: "mongo" | "execute", text: string): void;
  log(callId: number, text: string): void;
}

interface RunningCall {
  resolve: (text: string) => void;
  reject: (error: Error) => void;
  deadline: number;
  timer: NodeJS.Timeout;
}

export interface SandboxAppInfo {
  app: { id: string; clientAppId: string; name: string };
  values: Record<string, unknown>;
  environment: { tag: string; values: Record<string, unknown> };
}

type WorkerKind = "done" | "error" | "log" | "mongo" | "execute" | "pong" | "fatal";

let nextCallId = 1;

export class Sandbox {
  private readonly worker: Worker;
  private readonly calls = new Map<number, RunningCall>();
  private readonly defined = new Set<string>();
  private ended = false;
  /** No new calls: a call of this worker ran past its deadline, so it may be stuck. */
  private retired = false;
  private pingTimer: NodeJS.Timeout | null = null;
  /**
   * Runs and deliveries for the worker, sent together once per turn of the event loop: on one core
   * every message to a sleeping worker costs two thread switches (~18 µs round trip alone, against
   * ~2.5 µs when messages are batched), which made thread switching most of a `sum` call.
   */
  private outbox: string[] = [];
  private flushTimer: NodeJS.Immediate | null = null;

  constructor(
    private readonly host: SandboxHost,
    info: SandboxAppInfo,
    memoryLimitMb = 350,
  ) {
    this.worker = new Worker(workerSource, {
      eval: true,
      workerData: {
        name: `functions:${info.app.clientAppId}`,
        bsonBundlePath,
        bootstrapSource,
        appText: JSON.stringify(info),
      },
      resourceLimits: { maxOldGenerationSizeMb: memoryLimitMb },
      // Lets the worker refuse a dynamic import() with an error of the context's realm (function-worker.ts).
      execArgv: ["--experimental-vm-modules"],
      stdout: true,
      stderr: true,
    });
    this.worker.unref();
    this.worker.on("message", (message: string | string[]) => {
      // "kind\0callId\0pendingId\0text", or a batch of them (see function-worker.ts)
      if (typeof message === "string") this.receive(message);
      else for (const one of message) this.receive(one);
    });
    this.worker.on("error", (error: Error & { code?: string }) => {
      this.end(
        error.code === "ERR_WORKER_OUT_OF_MEMORY"
          ? new ExecutionMemoryLimit("execution memory limit exceeded")
          : new Error(error.message),
      );
    });
    this.worker.on("exit", () => this.end(new ExecutionTimeout("execution time limit exceeded")));
  }

  private receive(message: string): void {
    const a = message.indexOf("\u0000");
    const b = message.indexOf("\u0000", a + 1);
    const c = message.indexOf("\u0000", b + 1);
    this.onMessage(
      message.slice(0, a) as WorkerKind,
      Number(message.slice(a + 1, b)),
      Number(message.slice(b + 1, c)),
      message.slice(c + 1),
    );
  }

  private post(text: string): void {
    this.outbox.push(text);
    this.flushTimer ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushTimer = null;
    const batch = this.outbox;
    this.outbox = [];
    if (this.ended || batch.length === 0) return;
    this.worker.postMessage(batch.length === 1 ? batch[0] : batch);
  }

  get usable(): boolean {
    return !this.ended && !this.retired;
  }

  get running(): number {
    return this.calls.size;
  }

  /** Runs a function: `argsText` and the result are canonical Extended JSON text. */
  run(options: { fn: FunctionSource; argsText: string; callText: string; deadline: number }): {
    callId: number;
    result: Promise<string>;
  } {
    const callId = nextCallId++;
    const result = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => this.expire(callId), Math.max(1, options.deadline - Date.now()));
      this.calls.set(callId, { resolve, reject, deadline: options.deadline, timer });
    });
    const { fn } = options;
    if (!this.defined.has(fn.version)) {
      this.defined.add(fn.version);
      // A source that does not compile defines a factory that throws its SyntaxError, per call.
      this.worker.postMessage({
        type: "define",
        key: fn.version,
        name: fn.name,
        parameters: factoryParameters,
        body: factoryBody(fn.source),
      });
    }
    this.post(
      JSON.stringify({
        type: "run",
        callId,
        key: fn.version,
        name: fn.name,
        args: options.argsText,
        call: options.callText,
      }),
    );
    return { callId, result };
  }

  /** Answers a pending request of a running function (text is Extended JSON, or an error message). */
  deliver(pendingId: number, ok: boolean, text: string): void {
    if (!this.ended) this.post(JSON.stringify({ type: "deliver", id: pendingId, ok, text }));
  }

  close(): void {
    this.end(new ExecutionTimeout("execution time limit exceeded"));
  }

  private onMessage(kind: WorkerKind, callId: number, pendingId: number, text: string): void {
    switch (kind) {
      case "done":
        this.settle(callId, { text });
        break;
      case "error":
        this.settle(callId, new Error(text));
        break;
      case "log":
        this.host.log(callId, text);
        break;
      case "mongo":
      case "execute":
        this.host.request(this, callId, pendingId, kind, text);
        break;
      case "fatal":
        // The worker stops (function-worker.ts): its calls fail with its text.
        this.end(new Error(text));
        break;
      case "pong":
        // Not stuck, only waiting: let its other calls finish, then stop it.
        if (this.pingTimer) clearTimeout(this.pingTimer);
        this.pingTimer = null;
        if (this.calls.size === 0) this.close();
        break;
    }
  }

  /**
   * A call passed its deadline: fail it, send new calls to a fresh worker, and find out whether this
   * one is stuck (terminate it now) or just waiting (stop it once its other calls are done).
   */
  private expire(callId: number): void {
    this.settle(callId, new ExecutionTimeout("execution time limit exceeded"));
    this.retired = true;
    if (this.ended || this.pingTimer) return;
    this.pingTimer = setTimeout(() => this.close(), pingGraceMs);
    this.worker.postMessage({ type: "ping" });
  }

  private settle(callId: number, outcome: Error | { text: string }): void {
    const call = this.calls.get(callId);
    if (!call) return;
    this.calls.delete(callId);
    clearTimeout(call.timer);
    if (outcome instanceof Error) call.reject(outcome);
    else call.resolve(outcome.text);
    if (this.retired && !this.pingTimer && this.calls.size === 0) this.close();
  }

  private end(reason: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (this.pingTimer) clearTimeout(this.pingTimer);
    if (this.flushTimer) clearImmediate(this.flushTimer);
    this.flushTimer = null;
    this.outbox = [];
    for (const id of [...this.calls.keys()]) this.settle(id, reason);
    void this.worker.terminate();
  }
}
