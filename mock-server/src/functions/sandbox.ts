/**
 * One app's function runner on the emulator's side: a Node process of its own holding the app's
 * `node:vm` context (see function-worker.ts and sandbox-bootstrap.ts), started under Node's
 * permission model with no child processes, workers, addons or string compilation, and no file
 * but the modules functions may require (read),
 * and none of the emulator's environment (docs/decisions/0010). Calls cross as text over a pipe
 * (framed: each text's length in characters, a colon, the text); the process never blocks the
 * emulator. At a call's deadline the call fails (a call made while the process starts counts its
 * time from the process's start-up's end: the start is the emulator's, not the function's); if
 * the process does not answer a ping at once it is stuck (a busy loop, an endless promise chain)
 * and is killed, failing its other calls too, and the app gets a fresh process on its next call.
 * Before that, a process whose calls keep its thread from answering pings is reported busy, so
 * that the host sends other calls elsewhere (app-functions.ts). Memory is capped like the
 * service's 350 MB per function run.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import type { Socket } from "node:net";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { packagedModules, packageNameOf, supportPackages } from "../config/function-modules.ts";
import type { FunctionSource } from "./function-folder.ts";
import { workerSource } from "./function-worker.ts";
import { bootstrapSource, factoryBody, factoryParameters } from "./sandbox-bootstrap.ts";

const require = createRequire(import.meta.url);
// The browser build of the BSON library (an IIFE defining `BSON`), beside the package's main file;
// read here and sent to each process (which reads only the modules functions may require).
const bsonBundlePath = join(dirname(require.resolve("bson")), "bson.bundle.js");
let bsonSource: string | null = null;
let bufferSource: string | null = null;

/**
 * Where modules functions require are read from (docs/decisions/0038): the app's own
 * functions/node_modules (null: none); the folders of the packages the built-in modules are
 * offered as (events, util, path-browserify, …: dependencies of this package) with their
 * dependencies', the only ones of this package's node_modules the process may read (not the whole
 * folder: it holds links to this project's own); the folder above them all, where a search for a
 * dependency of theirs stops; and the main file of each, by the name the loader asks for, as this
 * package resolves it.
 */
export interface ModuleRoots {
  app: string | null;
  top: string;
  packages: string[];
  builtins: Record<string, string>;
}

/** The packages of the modules offered as packages and of what they are made of (config/function-modules.ts). */
const builtinRequests: Readonly<Record<string, string>> = {
  ...packagedModules,
  ...Object.fromEntries(supportPackages.map((name) => [name, name])),
};
const builtinPackageNames = [...new Set(Object.values(builtinRequests).map(packageNameOf))];

/** This module's folder: where Node starts its search for this package's dependencies. */
const here = dirname(fileURLToPath(import.meta.url));

interface BuiltinModules {
  packages: string[];
  top: string;
  builtins: Record<string, string>;
}
let builtinModules: BuiltinModules | null = null;

/** The built-in modules' package folders and, through their dependencies, those they need; their main files. */
function builtinModulesFound(): BuiltinModules {
  if (builtinModules) return builtinModules;
  const found = new Set<string>();
  const locate = (from: string, name: string): string | null => {
    for (let dir = from; ; dir = dirname(dir)) {
      const candidate = join(dir, "node_modules", name);
      if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
      if (dirname(dir) === dir) return null;
    }
  };
  const visit = (dir: string | null) => {
    if (dir === null || found.has(dir)) return;
    found.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    for (const name of Object.keys(pkg.dependencies ?? {})) visit(locate(dir, name));
  };
  for (const name of builtinPackageNames) visit(locate(here, name));
  const packages = [...found].sort();
  // ("url/": the package, not Node's module of that name.)
  const builtins = Object.fromEntries(
    Object.entries(builtinRequests).map(([name, request]) => [
      name,
      realpathSync(require.resolve(request.includes("/") ? request : `${request}/`)),
    ]),
  );
  builtinModules = { packages, top: commonFolder(packages), builtins };
  return builtinModules;
}

/** The deepest folder holding every one of these. */
function commonFolder(dirs: string[]): string {
  let common = dirs[0] ?? sep;
  while (!dirs.every((dir) => dir === common || dir.startsWith(common.endsWith(sep) ? common : common + sep))) {
    common = dirname(common);
  }
  return common;
}

/** The folders of the built-in modules' packages and of their dependencies: what a function process may read. */
export const builtinPackageDirs = (): string[] => builtinModulesFound().packages;

/**
 * Node's `Buffer` for functions (a global of App Services functions): the `buffer` package — the
 * pure-JavaScript one browsers use — with the two it requires, as one script that defines the
 * global, run in the context after the BSON library (which keeps its own byte handling).
 */
function bufferBundle(): string {
  // ("buffer/": the package, not Node's module of that name; the two it requires, beside it.)
  const main = require.resolve("buffer/");
  const modules = ["base64-js", "ieee754", "buffer"].map((name) => {
    const text = readFileSync(name === "buffer" ? main : require.resolve(name, { paths: [dirname(main)] }), "utf8");
    return `${JSON.stringify(name)}: function (module, exports, require) {\n${text}\n}`;
  });
  return `(function () {
  const sources = { ${modules.join(",\n")} };
  const loaded = Object.create(null);
  const require = (name) => {
    if (!(name in loaded)) {
      const module = { exports: {} };
      loaded[name] = module;
      sources[name](module, module.exports, require);
    }
    return loaded[name].exports;
  };
  Object.defineProperty(globalThis, "Buffer", { value: require("buffer").Buffer, writable: false, enumerable: false, configurable: false });
})();`;
}

/** Node's permission model: `--permission` from Node 22.13 on, `--experimental-permission` before. */
const permissionFlag = process.allowedNodeEnvironmentFlags.has("--permission")
  ? "--permission"
  : "--experimental-permission";

/**
 * How a function process is started: no permission granted but reading `readable` (the modules
 * functions may require; no other file, child processes, worker threads, addons, WASI or
 * inspector), no `eval` or `Function` from strings in its own realm either, the memory limit, and
 * vm modules so that import() can be refused in the context's realm.
 */
export function functionProcessArgs(
  memoryLimitMb: number,
  inspectPort: number | null = null,
  readable: string[] = [],
): string[] {
  return [
    // The permission model keeps the inspector from starting: a process that waits for a debugger
    // (--inspect-functions, never in production) runs without it (function-inspector.ts). Files:
    // only the modules functions may require (ModuleRoots), read.
    ...(inspectPort === null
      ? [permissionFlag, ...readable.map((dir) => `--allow-fs-read=${join(dir, "*")}`)]
      : [`--inspect=127.0.0.1:${inspectPort}`]),
    "--disallow-code-generation-from-strings",
    "--experimental-vm-modules",
    `--max-old-space-size=${memoryLimitMb}`,
    // One V8 helper thread instead of one per core: a process per app must stay small.
    "--v8-pool-size=1",
    "--no-warnings",
    "-e",
    workerSource,
  ];
}

/**
 * The function process's environment: none of the emulator's (it holds secrets: the signing
 * secret, the database URL, the control token), but what Windows needs to start a process; and
 * the time zone and locale of the service's functions, UTC and en-US (C.UTF-8), whatever the
 * host's — a function's `getHours()` or `toLocaleString()` answers on a laptop in any country what
 * it answers in CI and in production (decision 0002).
 */
export function functionProcessEnvironment(): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = { TZ: "UTC", LANG: "C.UTF-8" };
  if (process.env.SYSTEMROOT !== undefined) environment.SYSTEMROOT = process.env.SYSTEMROOT;
  return environment;
}

/**
 * The longest frame the emulator reads from a function process (a result, a MongoDB request): far
 * beyond any reply it may send (18 MB documents), short of what would exhaust the emulator's memory.
 */
const maxFrameLength = 256 * 1024 * 1024;

/** A text as a frame of the channel: its length in characters, a colon, the text. */
const frame = (text: string) => `${text.length}:${text}`;

/**
 * How many call contexts (`context.user` and `context.request` as text) a process keeps by id, and
 * how much of their text: past either, both sides forget them all and send them again as needed.
 */
export const contextLimits = { count: 512, chars: 1 << 20 };

/** How long a process may take to answer a ping before it counts as stuck. */
const pingGraceMs = 250;
/**
 * While a process has calls, it is pinged this often; one that has not answered for `busyAfterMs`
 * is busy — a call holds its thread (a loop, a long computation) — and the host is told, each look
 * while it stays so (app-functions.ts sends new calls elsewhere).
 *
 * A process with calls that has said nothing for `quietMs` may be held by one of them: new runs
 * wait for its answer to a ping before they are written. Held, it never answers, and the host gives
 * them to another process once it is seen busy (`releaseUnsent`); written, they could only have
 * waited behind the call holding it, to their deadline, whoever made them.
 */
export const livenessLimits = { everyMs: 100, busyAfterMs: 250, quietMs: 20 };
/** How long a process whose pipe broke has to close (and say why) before it is ended anyway. */
const channelErrorGraceMs = 1_000;
/** A process that has not said it is ready by then is ended, failing its calls. */
const startupLimitMs = 30_000;

export class ExecutionTimeout extends Error {}
export class ExecutionMemoryLimit extends Error {}
/** The function process could not read the call's arguments (the library's message). */
export class BadArguments extends Error {}
/** The call was never written to its process, which is busy: the host runs it in another. */
export class CallMoved extends Error {}

/** What the emulator offers functions (everything as text). */
export interface SandboxHost {
  /** A function call asks for a MongoDB action or another function; answer with `deliver`. */
  request(sandbox: Sandbox, callId: number, pendingId: number, kind: HostRequest, text: string): void;
  log(callId: number, text: string): void;
  /** The process has not answered a ping for `livenessLimits.busyAfterMs`: one of its calls holds it. */
  busy?(sandbox: Sandbox): void;
  /** The process has ended, and why its calls are failed (told before they are), but those it moves. */
  ended?(sandbox: Sandbox, reason: Error, moved: ReadonlySet<number>): void;
  /** The process gave up a request of its modules it made (`request` with call 0). */
  cancel?(sandbox: Sandbox, pendingId: number): void;
}

interface RunningCall {
  resolve: (text: string) => void;
  reject: (error: Error) => void;
  deadline: number;
  /** When it was made (Date.now()): a call made before the process was ready has its time from then on. */
  madeAt: number;
}

export interface SandboxAppInfo {
  app: {
    id: string;
    clientAppId: string;
    name: string;
    projectId?: string;
    deployment?: { model: string; providerRegion: string };
    lastDeployed?: string;
  };
  values: Record<string, unknown>;
  environment: { tag: string; values: Record<string, unknown> };
  /** The linked cluster's service name (`context.services.get(name)`). */
  service: string;
}

export interface SandboxOptions {
  /** The process's heap limit (the service's 350 MB a function run). */
  memoryLimitMb?: number;
  /** Listen for a debugger on this port of 127.0.0.1 (0: any free one), without the permission model. */
  inspectPort?: number | null;
  /** Told the debugger's WebSocket address once the process listens. */
  inspecting?: (url: string) => void;
  /** The app's functions/node_modules, if it has one (ModuleRoots). */
  appModules?: string | null;
}

/** What a function asks of the emulator: a MongoDB action, another function, an HTTP request. */
export type HostRequest = "mongo" | "execute" | "http";

/** What a function sees of a MongoDB server error (as the driver's MongoServerError). */
export interface ServerError {
  message: string;
  code: number;
  codeName: string;
  errorLabels: string[];
}

type WorkerKind = "ready" | "done" | "error" | "badargs" | "log" | HostRequest | "cancel" | "pong" | "fatal";

let nextCallId = 1;

export class Sandbox {
  private readonly child: ChildProcess;
  /** The pipe to the process (its file descriptor 3), and what was read of it short of a whole frame. */
  private readonly channel: Socket;
  private unread = "";
  private readonly calls = new Map<number, RunningCall>();
  /** The functions defined in the process (by their source's version), and the ids runs name them by. */
  private readonly defined = new Map<string, number>();
  /** The app clock's offset the process was last told ("t"), in milliseconds. */
  private clockOffsetSent = 0;
  private ended = false;
  /** The process has built its context and runs calls; until then no call's time runs. */
  private ready = false;
  private startupTimer: NodeJS.Timeout | null = null;
  /** No new calls: a call of this process ran past its deadline, or it was busy and the host moved on. */
  private retired = false;
  /** Ends a process that has not answered the ping sent when a call passed its deadline. */
  private pingTimer: NodeJS.Timeout | null = null;
  /** When the ping not yet answered was sent (Date.now()), if one is outstanding. */
  private pingSentAt: number | null = null;
  private livenessTimer: NodeJS.Timeout | null = null;
  private readonly watchLiveness: boolean;
  /**
   * One timer for all the calls' deadlines (a timer per call cost every call its setup and removal):
   * armed for the earliest; when it fires, the calls past theirs fail and it is armed for the next.
   */
  private deadlineTimer: NodeJS.Timeout | null = null;
  private armedFor = Number.POSITIVE_INFINITY;
  /**
   * Runs and deliveries for the process, sent together once per two turns of the event loop: every
   * message to a sleeping process costs a wake-up, and batches cost one instead of one per call.
   */
  private outbox = "";
  /**
   * The runs (and the contexts and clock offsets they need), written with the outbox unless the
   * process may be held (see `livenessLimits`); the calls whose runs they hold, not yet written.
   */
  private runbox = "";
  private readonly unsent = new Set<number>();
  /** When the process last said anything (Date.now()). */
  private lastHeardAt = 0;
  private flushTimer: NodeJS.Immediate | null = null;
  /**
   * The call contexts the process keeps, by text: each distinct context crosses once and runs name
   * it by id (the same user's calls share one; it was a fifth of each call's bytes).
   */
  private readonly contexts = new Map<string, number>();
  private contextChars = 0;
  private nextContextId = 1;
  /** The end of the process's stderr (V8 reports running out of memory there). */
  private stderrTail = "";

  constructor(
    private readonly host: SandboxHost,
    info: SandboxAppInfo,
    { memoryLimitMb = 350, inspectPort = null, inspecting, appModules = null }: SandboxOptions = {},
  ) {
    // (Not a process being debugged: one stopped at a breakpoint answers nothing, rightly.)
    this.watchLiveness = inspectPort === null;
    bsonSource ??= readFileSync(bsonBundlePath, "utf8");
    bufferSource ??= bufferBundle();
    const { packages, top, builtins } = builtinModulesFound();
    const moduleRoots: ModuleRoots = { app: appModules, top, packages, builtins };
    const readable = appModules === null ? packages : [appModules, ...packages];
    this.child = spawn(process.execPath, functionProcessArgs(memoryLimitMb, inspectPort, readable), {
      stdio: ["ignore", "ignore", "pipe", "pipe"],
      env: functionProcessEnvironment(),
      windowsHide: true,
    });
    // Neither the process nor its channel keeps the emulator running; the process ends with it.
    this.child.unref();
    this.channel = this.child.stdio[3] as Socket;
    this.channel.unref();
    (this.child.stderr as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
    this.child.stderr?.setEncoding("utf8");
    this.child.stderr?.on("data", (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4096);
      const url = inspecting && /Debugger listening on (ws:\/\/\S+)/.exec(chunk)?.[1];
      if (url) inspecting(url);
    });
    this.channel.setEncoding("utf8");
    this.channel.on("data", (chunk: string) => this.read(chunk));
    const failed = (error: Error) => this.end(new Error(`the functions' process failed: ${error.message}`));
    // A pipe that breaks is most often a process that is ending (a write, such as a ping, to one
    // that ran out of memory): its close says why, from its stderr. Failing now would name the
    // broken pipe instead; a process that does not close soon fails with it.
    this.channel.on("error", (error) => {
      const close = setTimeout(() => failed(error), channelErrorGraceMs);
      close.unref();
      this.child.once("close", () => clearTimeout(close));
    });
    this.child.on("error", failed);
    // After the process's stderr is read to its end (V8 writes there before it aborts).
    this.child.on("close", () => {
      this.end(
        /heap out of memory|Reached heap limit/.test(this.stderrTail)
          ? new ExecutionMemoryLimit("execution memory limit exceeded")
          : new ExecutionTimeout("execution time limit exceeded"),
      );
    });
    this.startupTimer = setTimeout(
      () => this.end(new Error("the functions' process failed: it did not start")),
      startupLimitMs,
    );
    this.startupTimer.unref();
    this.send(
      JSON.stringify({
        type: "init",
        name: `functions:${info.app.clientAppId}`,
        bsonSource,
        bufferSource,
        bootstrapSource,
        appText: JSON.stringify({ ...info, nodeVersion: process.version }),
        moduleRoots,
      }),
    );
  }

  /** The process id of the app's function process (tests check how it runs). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Writes one frame now (a write to a process that has just died fails its calls, or its close event does). */
  private send(text: string): void {
    if (!this.ended) this.channel.write(frame(text));
  }

  /**
   * Frames from the process: "kind,callId,pendingId,text" each (see function-worker.ts). A frame
   * that is not one (the process's code is not trusted) or too large ends the process.
   */
  private read(chunk: string): void {
    this.lastHeardAt = Date.now();
    let unread = this.unread.length === 0 ? chunk : this.unread + chunk;
    let at = 0;
    while (!this.ended) {
      const colon = unread.indexOf(":", at);
      if (colon < 0) break;
      const length = colon - at <= 10 ? Number(unread.slice(at, colon)) : Number.NaN;
      if (!Number.isSafeInteger(length) || length < 0 || length > maxFrameLength) {
        this.end(new Error("the functions' process failed: it sent a broken message"));
        return;
      }
      const end = colon + 1 + length;
      if (end > unread.length) break;
      this.receive(unread.slice(colon + 1, end));
      at = end;
    }
    if (at > 0) unread = unread.slice(at);
    if (unread.length > maxFrameLength + 12)
      this.end(new Error("the functions' process failed: it sent a broken message"));
    this.unread = this.ended ? "" : unread;
  }

  private receive(message: string): void {
    const a = message.indexOf(",");
    const b = message.indexOf(",", a + 1);
    const c = message.indexOf(",", b + 1);
    this.onMessage(
      message.slice(0, a) as WorkerKind,
      Number(message.slice(a + 1, b)),
      Number(message.slice(b + 1, c)),
      message.slice(c + 1),
    );
  }

  private post(text: string, run = false): void {
    if (run) this.runbox += frame(text);
    else this.outbox += frame(text);
    // Written a turn later than it could be: that turn reads what else has arrived by then (without
    // waiting: an immediate is due), so busy servers send bigger batches and wake the process less.
    this.flushTimer ??= setImmediate(() => {
      this.flushTimer = setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    this.flushTimer = null;
    // Runs wait for the process to be ready (started() sends them): their time runs from then.
    if (!this.ready || this.ended) return;
    let batch = this.outbox;
    this.outbox = "";
    if (this.runbox.length > 0) {
      // (Sent when it answers: the pong flushes them.)
      if (this.mayBeHeld()) this.ping();
      else {
        batch += this.runbox;
        this.runbox = "";
        this.unsent.clear();
      }
    }
    if (batch.length > 0) this.channel.write(batch);
  }

  /** Whether new runs wait for an answer to a ping first (see `livenessLimits`). */
  private mayBeHeld(): boolean {
    if (!this.watchLiveness) return false;
    if (this.pingSentAt !== null) return true;
    return this.calls.size > this.unsent.size && Date.now() - this.lastHeardAt >= livenessLimits.quietMs;
  }

  /**
   * The calls not yet written to the process (it is busy: see `livenessLimits`) fail with CallMoved, for
   * the host to run in another process; this one never sees them. Only for a process the host then
   * retires: the contexts and clock offset their runs carried are dropped with them.
   */
  releaseUnsent(): Set<number> {
    const moved = new Set(this.unsent);
    this.unsent.clear();
    this.runbox = "";
    for (const callId of moved) this.settle(callId, new CallMoved("moved to another process"));
    return moved;
  }

  get usable(): boolean {
    return !this.ended && !this.retired;
  }

  /** Takes no new calls from now on; ends once its calls have (the host has another process for them). */
  retire(): void {
    if (this.ended || this.retired) return;
    this.retired = true;
    if (this.calls.size === 0) this.close();
  }

  get running(): number {
    return this.calls.size;
  }

  /** How long the process has left a ping unanswered, 0 if none is (tests). */
  get unansweredPingMs(): number {
    return this.pingSentAt === null ? 0 : Date.now() - this.pingSentAt;
  }

  /**
   * Runs a function: `argsText` and the result are canonical Extended JSON text; with `argsInBody`,
   * `argsText` is a request's JSON body, whose `arguments` the process reads (a large body's, which
   * the main thread then neither writes nor checks again).
   */
  run(options: {
    fn: FunctionSource;
    argsText: string;
    argsInBody?: boolean;
    callText: string;
    /** `context.request` of this call, when it differs from the context's (`{}`). */
    requestText?: string | undefined;
    /**
     * An HTTPS endpoint's call: `argsText` holds the request argument; the function gets it and a
     * response to fill, and answers `{result?, response}` (sandbox-bootstrap.ts endpointAnswer).
     */
    endpoint?: boolean;
    deadline: number;
    /** How far the app's clock runs ahead of the real one: the time the function's `Date` says. */
    clockOffsetMs?: number;
  }): {
    callId: number;
    result: Promise<string>;
  } {
    const callId = nextCallId++;
    const result = new Promise<string>((resolve, reject) => {
      this.calls.set(callId, { resolve, reject, deadline: options.deadline, madeAt: Date.now() });
    });
    if (this.ready) {
      this.watchDeadline(options.deadline);
      this.startLiveness();
    }
    const { fn } = options;
    let fnId = this.defined.get(fn.version);
    if (fnId === undefined) {
      fnId = this.defined.size + 1;
      this.defined.set(fn.version, fnId);
      // A source that does not compile defines a factory that throws its SyntaxError, per call.
      this.send(
        JSON.stringify({
          type: "define",
          id: fnId,
          name: fn.name,
          parameters: factoryParameters,
          body: factoryBody(fn.source),
        }),
      );
    }
    // "t" and the app clock's offset when it moved since the last run (the process starts at 0).
    const offset = options.clockOffsetMs ?? 0;
    if (offset !== this.clockOffsetSent) {
      this.clockOffsetSent = offset;
      this.post(`t${offset},`, true);
    }
    // "r" callId,functionId,contextId, then the arguments' text to the end ("b": the body holding
    // them; sandbox-bootstrap.ts reads it). "R"/"B": the call's own context.request first, its
    // length after the context's id.
    const context = this.contextFor(options.callText);
    const { requestText } = options;
    if (options.endpoint) {
      const request = requestText ?? "{}";
      this.post(`E${callId},${fnId},${context},${request.length},${request}${options.argsText}`, true);
    } else if (requestText === undefined) {
      this.post(`${options.argsInBody ? "b" : "r"}${callId},${fnId},${context},${options.argsText}`, true);
    } else {
      const kind = options.argsInBody ? "B" : "R";
      this.post(`${kind}${callId},${fnId},${context},${requestText.length},${requestText}${options.argsText}`, true);
    }
    this.unsent.add(callId);
    return { callId, result };
  }

  /**
   * The id of a call's context in the process, sent first ("u" id, then the text) when the process
   * does not have it; past the limits both sides forget every context ("z") first. Everything goes
   * through the outbox, in order, so that a run never names a context the process has not read.
   */
  private contextFor(text: string): number {
    let id = this.contexts.get(text);
    if (id === undefined) {
      if (this.contexts.size >= contextLimits.count || this.contextChars + text.length > contextLimits.chars) {
        this.contexts.clear();
        this.contextChars = 0;
        this.post("z", true);
      }
      id = this.nextContextId++;
      this.contexts.set(text, id);
      this.contextChars += text.length;
      this.post(`u${id},${text}`, true);
    }
    return id;
  }

  /** Answers a pending request of a running function (text is Extended JSON, or an error message). */
  deliver(pendingId: number, ok: boolean, text: string): void {
    // "d" pendingId,1 or 0, then the text (sandbox-bootstrap.ts reads it).
    if (!this.ended) this.post(`d${pendingId},${ok ? 1 : 0},${text}`);
  }

  /** Fails a pending request with a MongoDB server error the function can read (code, name, labels). */
  deliverServerError(pendingId: number, error: ServerError): void {
    const { message, code, codeName, errorLabels } = error;
    if (!this.ended) this.post(`d${pendingId},2,${JSON.stringify({ message, code, codeName, errorLabels })}`);
  }

  close(): void {
    this.end(new ExecutionTimeout("execution time limit exceeded"));
  }

  private onMessage(kind: WorkerKind, callId: number, pendingId: number, text: string): void {
    switch (kind) {
      case "ready":
        this.started();
        break;
      case "done":
        this.settle(callId, { text });
        break;
      case "error":
        this.settle(callId, new Error(text));
        break;
      case "badargs":
        this.settle(callId, new BadArguments(text));
        break;
      case "log":
        this.host.log(callId, text);
        break;
      case "mongo":
      case "execute":
      case "http":
        this.host.request(this, callId, pendingId, kind, text);
        break;
      case "cancel":
        // A module's HTTP request given up (its ClientRequest destroyed before its response).
        this.host.cancel?.(this, pendingId);
        break;
      case "fatal":
        // The process stops (function-worker.ts): its calls fail with its text.
        this.end(new Error(text));
        break;
      case "pong":
        // It answers: not stuck (a retired one is only waiting, and stops once its calls are done).
        this.pingSentAt = null;
        if (this.pingTimer) clearTimeout(this.pingTimer);
        this.pingTimer = null;
        if (this.retired && this.calls.size === 0) this.close();
        else if (this.runbox.length > 0) this.flush();
        break;
    }
  }

  /** The process is ready: the calls made meanwhile get their whole time from now. */
  private started(): void {
    if (this.ready) return;
    this.ready = true;
    if (this.startupTimer) clearTimeout(this.startupTimer);
    this.startupTimer = null;
    const now = Date.now();
    let earliest = Number.POSITIVE_INFINITY;
    for (const call of this.calls.values()) {
      call.deadline += now - call.madeAt;
      earliest = Math.min(earliest, call.deadline);
    }
    if (earliest !== Number.POSITIVE_INFINITY) this.watchDeadline(earliest);
    if (this.calls.size > 0) this.startLiveness();
    this.flush();
  }

  /** Pings the process while it has calls (see livenessLimits). */
  private startLiveness(): void {
    if (!this.watchLiveness || this.livenessTimer || this.ended) return;
    this.livenessTimer = setInterval(() => this.checkLiveness(), livenessLimits.everyMs);
    this.livenessTimer.unref();
  }

  private stopLiveness(): void {
    if (this.livenessTimer) clearInterval(this.livenessTimer);
    this.livenessTimer = null;
  }

  private checkLiveness(): void {
    if (this.ended || this.calls.size === 0) {
      this.stopLiveness();
      return;
    }
    if (this.pingSentAt === null) this.ping();
    else if (Date.now() - this.pingSentAt >= livenessLimits.busyAfterMs) this.host.busy?.(this);
  }

  private ping(): void {
    if (this.pingSentAt !== null || this.ended) return;
    this.pingSentAt = Date.now();
    this.send('{"type":"ping"}');
  }

  private watchDeadline(deadline: number): void {
    if (this.ended || (this.deadlineTimer && deadline >= this.armedFor)) return;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.armedFor = deadline;
    this.deadlineTimer = setTimeout(() => this.checkDeadlines(), Math.max(1, deadline - Date.now()));
  }

  private checkDeadlines(): void {
    this.deadlineTimer = null;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [callId, call] of this.calls) {
      if (call.deadline <= now) this.expire(callId);
      else if (call.deadline < next) next = call.deadline;
    }
    if (next !== Number.POSITIVE_INFINITY) this.watchDeadline(next);
  }

  /**
   * A call passed its deadline: fail it, send new calls to a fresh process, and find out whether this
   * one is stuck (terminate it now) or just waiting (stop it once its other calls are done).
   */
  private expire(callId: number): void {
    this.settle(callId, new ExecutionTimeout("execution time limit exceeded"));
    this.retired = true;
    if (this.ended || this.pingTimer) return;
    // (A ping still unanswered from before counts: the process has not turned since it was sent.)
    this.pingTimer = setTimeout(() => this.close(), pingGraceMs);
    this.ping();
  }

  private settle(callId: number, outcome: Error | { text: string }): void {
    const call = this.calls.get(callId);
    if (!call) return;
    this.calls.delete(callId);
    this.unsent.delete(callId);
    if (outcome instanceof Error) call.reject(outcome);
    else call.resolve(outcome.text);
    if (this.calls.size === 0) this.stopLiveness();
    if (this.retired && !this.pingTimer && this.calls.size === 0) this.close();
  }

  private end(reason: Error): void {
    if (this.ended) return;
    this.ended = true;
    if (this.pingTimer) clearTimeout(this.pingTimer);
    this.stopLiveness();
    if (this.startupTimer) clearTimeout(this.startupTimer);
    this.startupTimer = null;
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
    if (this.flushTimer) clearImmediate(this.flushTimer);
    this.flushTimer = null;
    this.outbox = "";
    this.runbox = "";
    // A call's memory ended it: the runs it was never given go to another process, as a busy one's
    // (not when it failed otherwise: another might fail as it did, or the app is closing).
    const moved = reason instanceof ExecutionMemoryLimit ? new Set(this.unsent) : new Set<number>();
    this.unsent.clear();
    this.unread = "";
    this.host.ended?.(this, reason, moved);
    for (const id of [...this.calls.keys()])
      this.settle(id, moved.has(id) ? new CallMoved("moved to another process") : reason);
    this.child.kill("SIGKILL");
  }
}
