/**
 * One app's function context: a `node:vm` context holding the BSON library and the bridge. User
 * code runs only through `runInContext` with a deadline, and the context has its own microtask
 * queue (`microtaskMode: "afterEvaluate"`), so neither a busy loop nor an endless promise chain can
 * hold the emulator: the run is cut off at the deadline and the context is discarded. No string
 * evaluation (`eval`, `Function`) inside; no `require`, `process` or file system.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import vm from "node:vm";
import type { FunctionSource } from "./function-folder.ts";
import { bootstrapSource, definitionSource } from "./sandbox-bootstrap.ts";

const require = createRequire(import.meta.url);
// The browser build of the BSON library (an IIFE defining `BSON`), beside the package's main file.
const bsonBundle = new vm.Script(readFileSync(join(dirname(require.resolve("bson")), "bson.bundle.js"), "utf8"), {
  filename: "bson.bundle.js",
});
const bootstrapScript = new vm.Script(bootstrapSource, { filename: "functions-bridge.js" });
const dispatchScript = new vm.Script("__dispatch(__msg)", { filename: "functions-dispatch.js" });
/** Compiled definitions, per loaded source (a reloaded file is a new FunctionSource). */
const definitions = new WeakMap<FunctionSource, vm.Script>();

export class ExecutionTimeout extends Error {}

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

let nextCallId = 1;

export class Sandbox {
  private readonly context: vm.Context;
  private readonly calls = new Map<number, RunningCall>();
  private readonly defined = new Set<string>();
  private poisoned = false;

  constructor(
    private readonly host: SandboxHost,
    info: SandboxAppInfo,
  ) {
    // A prototype-less global: `this.constructor` inside leads to the context's own (harmless) Object.
    this.context = vm.createContext(Object.create(null), {
      name: `functions:${info.app.clientAppId}`,
      codeGeneration: { strings: false, wasm: false },
      microtaskMode: "afterEvaluate",
    });
    bsonBundle.runInContext(this.context, { timeout: 5000 });
    const bootstrap = bootstrapScript.runInContext(this.context, { timeout: 5000 }) as (
      hostCall: (kind: string, callId: number, pendingId: number, text: string) => void,
      appText: string,
    ) => void;
    bootstrap(this.hostCall, JSON.stringify(info));
  }

  get usable(): boolean {
    return !this.poisoned;
  }

  get running(): number {
    return this.calls.size;
  }

  /**
   * Runs a function: `argsText` and the result are canonical Extended JSON text.
   * Rejects with the function's error text, or ExecutionTimeout past the deadline.
   */
  run(options: { fn: FunctionSource; argsText: string; callText: string; deadline: number }): {
    callId: number;
    result: Promise<string>;
  } {
    const callId = nextCallId++;
    const result = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => this.settle(callId, new ExecutionTimeout("execution time limit exceeded")),
        Math.max(1, options.deadline - Date.now()),
      );
      timer.unref?.();
      this.calls.set(callId, { resolve, reject, deadline: options.deadline, timer });
    });
    const { fn } = options;
    try {
      if (!this.defined.has(fn.version)) {
        let script = definitions.get(fn);
        if (!script) {
          script = new vm.Script(definitionSource(fn.source), { filename: `functions/${fn.name}.js`, lineOffset: -1 });
          definitions.set(fn, script);
        }
        this.send(script, fn.version);
        this.defined.add(fn.version);
      }
      this.send(
        dispatchScript,
        JSON.stringify({
          type: "run",
          callId,
          key: fn.version,
          name: fn.name,
          args: options.argsText,
          call: options.callText,
        }),
      );
    } catch (error) {
      this.settle(callId, error instanceof ExecutionTimeout ? error : new Error(errorText(error)));
    }
    return { callId, result };
  }

  /** Answers a pending request of a running function (text is Extended JSON, or an error message). */
  deliver(pendingId: number, ok: boolean, text: string): void {
    if (this.poisoned) return;
    try {
      this.send(dispatchScript, JSON.stringify({ type: "deliver", id: pendingId, ok, text }));
    } catch {
      // send() has poisoned the sandbox and failed its calls
    }
  }

  deadlineOf(callId: number): number | undefined {
    return this.calls.get(callId)?.deadline;
  }

  private send(script: vm.Script, message: string): void {
    if (this.poisoned) throw new ExecutionTimeout("execution time limit exceeded");
    (this.context as Record<string, unknown>).__msg = message;
    let earliest = Number.POSITIVE_INFINITY;
    for (const call of this.calls.values()) earliest = Math.min(earliest, call.deadline);
    const timeout = Number.isFinite(earliest) ? Math.max(1, Math.ceil(earliest - Date.now())) : 5000;
    try {
      script.runInContext(this.context, { timeout });
    } catch (error) {
      const timedOut = (error as { code?: string }).code === "ERR_SCRIPT_EXECUTION_TIMEOUT";
      if (timedOut) {
        // A runaway function: nothing in this context can be trusted to finish. Discard it.
        this.poisoned = true;
        for (const id of [...this.calls.keys()]) this.settle(id, new ExecutionTimeout("execution time limit exceeded"));
        throw new ExecutionTimeout("execution time limit exceeded");
      }
      // A syntax error in a function's source surfaces here, as text only.
      throw new Error(errorText(error));
    }
  }

  private settle(callId: number, outcome: Error | { text: string }): void {
    const call = this.calls.get(callId);
    if (!call) return;
    this.calls.delete(callId);
    clearTimeout(call.timer);
    if (outcome instanceof Error) call.reject(outcome);
    else call.resolve(outcome.text);
  }

  /** Called by the bridge inside the context: must never throw (a thrown error would cross realms). */
  private readonly hostCall = (kind: string, callId: number, pendingId: number, text: string): void => {
    try {
      if (typeof kind !== "string" || typeof callId !== "number" || typeof text !== "string") return;
      if (kind === "done") this.settle(callId, { text });
      else if (kind === "error") this.settle(callId, new Error(text));
      else if (kind === "log") this.host.log(callId, text);
      else if ((kind === "mongo" || kind === "execute") && typeof pendingId === "number") {
        setImmediate(() => this.host.request(this, callId, pendingId, kind, text));
      }
    } catch {
      // never let an emulator error object into the context
    }
  };
}

function errorText(error: unknown): string {
  if (error && typeof error === "object" && "message" in error) {
    const name = (error as { name?: unknown }).name;
    return `${typeof name === "string" ? `${name}: ` : ""}${String((error as { message: unknown }).message)}`;
  }
  return String(error);
}
