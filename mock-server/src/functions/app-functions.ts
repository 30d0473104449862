/**
 * An app's server functions: found in its app folder or inline config, run in the app's sandbox
 * with App Services' `context` (user, values, environment, services, functions), as the calling
 * user (rules apply) or as system, within the app's time limit.
 */
import { join } from "node:path";
import { Binary, EJSON } from "bson";
import type { FastifyBaseLogger } from "fastify";
import { defaultFunctionTimeoutMs, mongoServiceOf } from "../config/app-config.ts";
import { deployment } from "../config/deployment.ts";
import { type Document, fromEJSON, fromEJSONText, isDocument, toEJSONText } from "../data/documents.ts";
import { fromEJSONTextInSlices } from "../data/ejson-in-slices.ts";
import { isFunctionMongoAction, type MongoApp, MongoService, writeRefusal } from "../data/mongo-actions.ts";
import { type Principal, writerOf } from "../data/rules.ts";
import { TransactionFailure } from "../data/transactions.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { EventBus } from "../state/events.ts";
import { stableObjectIdHex } from "../state/ids.ts";
import { type DocumentStore, maxIdentityIdLength, type StoredUser } from "../store/store.ts";
import { CallTransactions } from "./call-transactions.ts";
import {
  allowsEveryone,
  appExpansions,
  callsFunctions,
  type Expansions,
  ExpressionError,
  evaluate,
  resolveFunctions,
} from "./can-evaluate.ts";
import type { FunctionFolder, FunctionSource } from "./function-folder.ts";
import { FunctionInspector } from "./function-inspector.ts";
import { functionModules, ModuleArchiveError } from "./module-archive.ts";
import type { OutboundHttp } from "./outbound-http.ts";
import {
  BadArguments,
  CallMoved,
  ExecutionMemoryLimit,
  ExecutionTimeout,
  type HostRequest,
  Sandbox,
  type SandboxHost,
} from "./sandbox.ts";

/** A function process idle this long is stopped (the app gets a new one on its next call). */
const idleProcessMs = 30_000;

/**
 * Busy processes (docs/decisions/0004): a process whose thread a call holds (a loop, a long
 * computation) takes no new calls once the emulator sees it (sandbox.ts `livenessLimits`); the
 * callers — users, or client addresses for calls without one — whose calls it held are suspects
 * for `suspectForMs`, and their calls go to a process of their own, so that one caller's busy
 * functions keep waiting only those who shared a process with it. An app has at most
 * `processes` processes (the two lanes and those finishing the calls they had): with no room, a
 * busy process keeps its lane and calls wait for it, as with one process. A process that runs out
 * of its `memoryMb` (the service's 350 MB a run) fails every call in it: its callers are suspects
 * too.
 */
export const busyLimits = { suspectForMs: 60_000, processes: 4, suspects: 10_000, memoryMb: 350 };

/**
 * HTTP requests of a process's modules (Node's http and https clients, sandbox-bootstrap.ts): no
 * call's, so each has the app's function time limit from when it is made, ends with its process,
 * and a process has at most this many at once.
 */
export const moduleHttpLimits = { concurrent: 64 };

/** Content codings the emulator's HTTP client decodes (undici's fetch): a module's response is given decoded. */
const decodedCodings = new Set(["gzip", "x-gzip", "deflate", "br"]);

/**
 * A response of context.http's shape as Node's http module would give it after decoding: the
 * emulator's client decoded a compressed body, so Content-Encoding goes and Content-Length is the
 * body's (a package would otherwise decode it again).
 */
function asDecoded(response: Record<string, unknown>): Record<string, unknown> {
  const headers = { ...(response.headers as Record<string, string[]>) };
  const coding = headers["Content-Encoding"]?.join(",").trim().toLowerCase();
  if (coding === undefined || !decodedCodings.has(coding)) return response;
  delete headers["Content-Encoding"];
  const body = response.body;
  const length = body instanceof Binary ? body.position : 0;
  if (headers["Content-Length"] !== undefined) headers["Content-Length"] = [String(length)];
  return { ...response, headers, contentLength: length };
}

export interface FunctionProcessCounts {
  busy: number;
  outOfMemory: number;
}

/** What functions need of their app (runtime/app-runtime.ts provides it). */
export interface FunctionApp extends MongoApp {
  /** The app's documents (their collections listed, transactions committed). */
  readonly data: DocumentStore;
  readonly appId: string;
  readonly domainId: string;
  /** When the app was made here (epoch ms): `context.app.lastDeployed`. */
  readonly createdAt: number;
  /** `context.user.custom_data` as canonical Extended JSON text (`{}` when none), at once when it can. */
  customUserDataText(userId: string): string | Promise<string>;
  /** Where `context.http` requests go out (the server's policy of hosts). */
  readonly outboundHttp: OutboundHttp;
  /** With `--inspect-functions`: the debugger ports of the function processes. */
  readonly functionInspector: FunctionInspector | null;
  /** The app's clock: the time its functions' `Date` says, and its actions'. */
  readonly clock: { readonly offsetMs: number; now(): number };
}

interface CallInfo {
  principal: Principal;
  /** The client's request behind the call, for `context.request` (none for the system's runs). */
  request?: (() => Document) | undefined;
  /** `context.request` as text, made already (an HTTPS endpoint's, with its route and method). */
  requestText?: string | undefined;
  /** An HTTPS endpoint's call (Sandbox.run's `endpoint`); the calls it makes are not. */
  endpoint?: boolean;
  /** `context` as the function sees it (read once per call, before its time starts): `{"user":…,"request":{}}`. */
  callText: string;
  deadline: number;
  /** Aborted when the call ends: what it started and still waits on stops (its HTTP requests). */
  ended?: AbortSignal;
  name: string;
  /** See RunOptions.argsInBody. */
  argsInBody?: boolean;
  /** The user whose request made the call (a function run as system for a user's call too), if any. */
  caller?: string | undefined;
  /** The process running it (set once it runs). */
  sandbox?: Sandbox;
  /** Its open multi-document transactions (made at its first). */
  transactions?: CallTransactions;
  /** The user whose custom data `callText` leaves out (`{}`): read for a function it calls that names it. */
  customDataLeftOut?: StoredUser;
}

/** Whom a call is held against when its process is busy: its user, else its request's client address. */
function callerKey(info: CallInfo): string | undefined {
  if (info.caller !== undefined) return `user:${info.caller}`;
  const address = info.request?.().remoteIPAddress;
  return typeof address === "string" ? `address:${address}` : undefined;
}

/**
 * `context.request` of a call made for a client's request, as the service documents it: the
 * address, headers and query string; the referrer and user agent only when the request had them.
 */
export function contextRequest(request: Document): Document {
  const { remoteIPAddress, requestHeaders, rawQueryString, httpReferrer, httpUserAgent } = request;
  return {
    remoteIPAddress,
    requestHeaders,
    rawQueryString,
    ...(httpReferrer ? { httpReferrer } : {}),
    ...(httpUserAgent ? { httpUserAgent } : {}),
  };
}

/** An HTTPS endpoint's call of its function (AppFunctions.runEndpoint). */
export interface EndpointCall {
  /** Who it runs as; null: the system. */
  user: StoredUser | null;
  /** The function's first argument, `{headers, query, body?}`, and as canonical Extended JSON. */
  requestArg: Document;
  requestArgText: string;
  /** `context.request`: the client's request with the endpoint's route and method. */
  contextRequest: Document;
  /** `%%request` for the function's `can_evaluate`. */
  expansion: () => Document;
  /** The client's address key (Principal.address). */
  address: string;
  /** `context.user.custom_data` is the user's (true) or `{}`. */
  fetchCustomUserData: boolean;
}

/** What an endpoint's function answered and set on its response. */
export interface EndpointOutcome {
  /** Its value (BSON-typed), when it was not undefined. */
  result?: unknown;
  hasResult: boolean;
  statusCode?: number;
  headers: [string, string[]][];
  /** The body it set, as bytes or as text. */
  body?: Uint8Array | string;
}

const tokenName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const fieldValue = /^[\t\x20-\x7e\x80-\xff]*$/;

/** An endpoint call's answer text, read and checked: anything else is the function's failure. */
function endpointOutcome(text: string): EndpointOutcome {
  const broken = () => errors.functionExecution("the endpoint's response is not one this server can send");
  let answer: unknown;
  try {
    answer = EJSON.parse(text, { relaxed: false });
  } catch {
    throw broken();
  }
  if (!isDocument(answer) || !isDocument(answer.response)) throw broken();
  const { response } = answer;
  const outcome: EndpointOutcome = { headers: [], hasResult: "result" in answer };
  if (outcome.hasResult) outcome.result = answer.result;
  if (response.statusCode !== undefined) {
    const code = Number(response.statusCode);
    if (!Number.isInteger(code) || code < 100 || code > 599) throw broken();
    outcome.statusCode = code;
  }
  if (!isDocument(response.headers)) throw broken();
  for (const [name, values] of Object.entries(response.headers)) {
    if (!tokenName.test(name) || !Array.isArray(values)) throw broken();
    if (!values.every((value) => typeof value === "string" && fieldValue.test(value))) throw broken();
    outcome.headers.push([name, values as string[]]);
  }
  if (response.body instanceof Binary) outcome.body = response.body.buffer.subarray(0, response.body.position);
  else if (typeof response.bodyText === "string") outcome.body = response.bodyText;
  else if (response.body !== undefined || response.bodyText !== undefined) throw broken();
  return outcome;
}

/**
 * Whether a function's source takes `context` otherwise than through one of its members by name
 * (`context.services` …): one that hands it on whole, or indexes it, may show any part of it.
 * `context` is a parameter of the function's module, not a global, and no code is made from
 * strings in its process, so only the name written in its source reaches it (a source with a
 * Unicode escape, which could write `context` as `\u0063ontext`, counts as taking it whole).
 */
const takesWholeContext = (source: string) =>
  source.includes("\\u") ||
  /\bcontext\b(?!\s*\.\s*(?:app|environment|functions|http|request|runningAsSystem|services|user|values)\b)/.test(
    source,
  );

/** A test of a function's source, answered once per function. */
function perSource(test: (source: string) => boolean): (fn: FunctionSource) => boolean {
  const answers = new WeakMap<FunctionSource, boolean>();
  return (fn) => {
    let answer = answers.get(fn);
    if (answer === undefined) {
      answer = test(fn.source);
      answers.set(fn, answer);
    }
    return answer;
  };
}

/**
 * Whether a function's source may see `context.request`: it names `request`, or takes `context`
 * whole. Only then is it sent with its calls (headers differ from call to call, so the text is not
 * kept with the user's context).
 */
const wantsRequest = perSource((source) => source.includes("request") || takesWholeContext(source));

/**
 * Whether a function's source may see `context.user.custom_data`: it names `user` or
 * `custom_data`, or takes `context` whole. Only then is the user's custom data read for its calls
 * (a round trip on PostgreSQL); the others are given `{}`, which they cannot reach.
 */
const wantsCustomData = perSource((source) => /user|custom_data/.test(source) || takesWholeContext(source));

/** The call's `context` text with this `context.user` text. */
const callTextOf = (userText: string) => `{"user":${userText},"request":{}}`;

/**
 * The `context` of a run as the system user: it says so (`context.runningAsSystem()`), and its
 * user — the caller, as the reference has it — has no `data` ("in system functions, the
 * user.data object is empty").
 */
function systemContextText(callText: string): string {
  let text = systemContexts.get(callText);
  if (text === undefined) {
    const context = JSON.parse(callText) as { user?: { data?: unknown }; system?: boolean };
    if (context.user) context.user.data = {};
    context.system = true;
    text = JSON.stringify(context);
    // (Made once per caller's context text: the few most recent are kept.)
    if (systemContexts.size >= 1_000) systemContexts.clear();
    systemContexts.set(callText, text);
  }
  return text;
}
const systemContexts = new Map<string, string>();

/** The `context` of a call without a user (system calls such as confirmation functions). */
const systemCallText = callTextOf(toEJSONText({ id: "", type: "system", data: {}, identities: [], custom_data: {} }));

/** What is kept of a user's `context` text (see callText). */
interface KnownUser {
  data: object;
  identities: object;
  /** `context.user` without its closing brace, for the custom data to follow. */
  head: string;
  /** The custom data text the last call had, and that call's `context` text. */
  custom: string;
  callText: string;
  /** The `context` text of a call that does not read the custom data (`{}`). */
  bareCallText?: string;
}

/** The system, running for the client (its address) that `principal` serves, if any. */
function systemAs(principal: Principal): Principal {
  return principal.address === undefined ? { kind: "system" } : { kind: "system", address: principal.address };
}

export interface RunOptions {
  /** The calling user (`context.user`); null for system calls such as confirmation functions. */
  user: StoredUser | null;
  /** Run with system rights whatever the function's own setting. */
  system: boolean;
  /** A call from a client: private functions are not found. */
  fromClient?: boolean;
  /** The text given is a request's JSON body, whose `arguments` are the call's (see Sandbox.run). */
  argsInBody?: boolean;
  /** A client's request, as `%%request` shows it to the function's `can_evaluate` (read only then). */
  request?: () => Document;
  /** The client's address key (Principal.address), for a client's call. */
  address?: string;
  /** The call's arguments as the request's body holds them (Extended JSON), for `%%args`. */
  args?: () => unknown[];
  /** How many rule expressions' `%function`s this call is inside (Principal.ruleDepth). */
  ruleDepth?: number;
}

/**
 * A function's error as the service's JavaScript engine words it where that differs from V8's:
 * an undeclared name is quoted (`ReferenceError: 'unknown' is not defined`, live in realm-kotlin's
 * tests; V8 says `unknown is not defined`).
 */
function inServiceWords(message: string): string {
  return message.replace(
    /^ReferenceError: ([\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*) is not defined$/u,
    "ReferenceError: '$1' is not defined",
  );
}

export class AppFunctions implements SandboxHost {
  /** The process calls go to; and the one for suspected callers' calls (see busyLimits). */
  private sandbox: Sandbox | null = null;
  private suspectSandbox: Sandbox | null = null;
  /** Every process not ended: the lanes' and retired ones finishing their calls. */
  private readonly processes = new Set<Sandbox>();
  /** Callers (callerKey) whose calls were in a busy process, until when (Date.now()). */
  private readonly suspects = new Map<string, number>();
  /** Busy processes kept for want of room (reported once). */
  private readonly crowded = new WeakSet<Sandbox>();
  private idleTimer: NodeJS.Timeout | null = null;
  /** Where busy processes are reported (the server's log; runtime/apps.ts sets it). */
  logger: () => FastifyBaseLogger | undefined = () => undefined;
  /** Processes seen busy (each once) and run out of memory: the server's running totals (metrics). */
  counts: FunctionProcessCounts = { busy: 0, outOfMemory: 0 };
  private readonly inline = new Map<string, FunctionSource>();
  private readonly calls = new Map<number, CallInfo>();
  private readonly users = new WeakMap<StoredUser, KnownUser>();

  constructor(
    private readonly app: FunctionApp,
    private readonly folder: FunctionFolder | null,
    private readonly events: EventBus,
  ) {
    for (const [name, fn] of Object.entries(app.config.functions ?? {})) {
      this.inline.set(name, {
        name,
        source: fn.source,
        private: fn.private ?? false,
        runAsSystem: fn.runAsSystem ?? false,
        ...(fn.canEvaluate !== undefined ? { canEvaluate: fn.canEvaluate } : {}),
        ...(fn.runAsUserId !== undefined ? { runAsUserId: fn.runAsUserId } : {}),
        ...(fn.runAsUserIdScriptSource !== undefined ? { runAsUserIdScriptSource: fn.runAsUserIdScriptSource } : {}),
        origin: "config",
        version: `config:${app.appId}:${name}`,
      });
    }
  }

  names(): string[] {
    return [...new Set([...(this.folder?.functions().keys() ?? []), ...this.inline.keys()])].sort();
  }

  private resolve(name: string): FunctionSource | undefined {
    return this.inline.get(name) ?? this.folder?.functions().get(name);
  }

  /** A function's source and settings (how an HTTPS endpoint running it authenticates). */
  settingsOf(name: string): FunctionSource | undefined {
    return this.resolve(name);
  }

  /**
   * Runs a function's `run_as_user_id_script_source` (as system, with the endpoint request's
   * `context.request`): whom its HTTPS endpoint runs as — a user id, or `{runAsSystem: true}`.
   */
  async runUserScript(name: string, source: string, contextRequest: Document): Promise<unknown> {
    const script: FunctionSource = {
      name: `${name} (run_as_user_id_script_source)`,
      source,
      private: true,
      runAsSystem: true,
      origin: "config",
      version: `script:${name}:${source}`,
    };
    const text = await this.execute(script, "[]", {
      name: script.name,
      callText: systemCallText,
      principal: { kind: "system" },
      requestText: toEJSONText(contextRequest),
      deadline: this.deadline(),
    });
    return EJSON.parse(text, { relaxed: true });
  }

  private sandboxFor(info: CallInfo): Sandbox {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    // (A suspect's call with no room for its lane's process goes where the others' go.)
    const suspect =
      this.suspects.size > 0 &&
      this.suspected(info) &&
      (this.suspectSandbox?.usable || this.processes.size < busyLimits.processes);
    const lane = suspect ? this.suspectSandbox : this.sandbox;
    if (lane?.usable) return lane;
    const sandbox = this.startProcess();
    if (suspect) this.suspectSandbox = sandbox;
    else this.sandbox = sandbox;
    return sandbox;
  }

  private suspected(info: CallInfo): boolean {
    const key = callerKey(info);
    if (key === undefined) return false;
    const until = this.suspects.get(key);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.suspects.delete(key);
    return false;
  }

  private startProcess(): Sandbox {
    const { config, appId, functionInspector: inspector } = this.app;
    const sandbox = new Sandbox(
      this,
      {
        app: {
          id: this.app.domainId,
          clientAppId: appId,
          name: config.name ?? appId,
          // (The reference's other fields: a project of the app's own, the location's region, and
          // when the app was made here.)
          projectId: stableObjectIdHex("project", appId),
          deployment: { model: deployment.model, providerRegion: deployment.providerRegion },
          lastDeployed: new Date(this.app.createdAt).toISOString(),
        },
        values: (config.values ?? {}) as Record<string, unknown>,
        environment: {
          tag: config.environment?.tag ?? "",
          values: (config.environment?.values ?? {}) as Record<string, unknown>,
        },
        service: mongoServiceOf(config),
      },
      {
        memoryLimitMb: busyLimits.memoryMb,
        appModules: this.appModules(),
        ...(inspector
          ? { inspectPort: inspector.portOf(appId), inspecting: (url: string) => inspector.listening(appId, url) }
          : {}),
      },
    );
    this.processes.add(sandbox);
    return sandbox;
  }

  /** Function processes running now (tests). */
  get processCount(): number {
    return this.processes.size;
  }

  /** How long the process new calls go to has left a ping unanswered (tests: it is held). */
  get unansweredPingMs(): number {
    return this.sandbox?.unansweredPingMs ?? 0;
  }

  /**
   * A process has not answered for a while: one of its calls holds its thread. Its callers become
   * suspects, and it takes no new calls if the app has room for another process (see busyLimits).
   */
  busy(sandbox: Sandbox): void {
    if (!sandbox.usable) {
      this.suspect(sandbox);
      return;
    }
    const replaced = this.processes.size < busyLimits.processes;
    // The calls it was never given go to the other process, and their callers are no suspects: they
    // only came while it was held (sandbox.ts livenessLimits).
    const moved = replaced ? sandbox.releaseUnsent() : new Set<number>();
    const callers = this.suspect(sandbox, moved);
    if (replaced) {
      sandbox.retire();
      if (this.sandbox === sandbox) this.sandbox = null;
      if (this.suspectSandbox === sandbox) this.suspectSandbox = null;
    } else if (this.crowded.has(sandbox)) return;
    else this.crowded.add(sandbox);
    this.counts.busy++;
    this.logger()?.warn(
      { appId: this.app.appId, calls: sandbox.running, callers: callers.size },
      replaced
        ? "a function call holds its process: new calls go to another one"
        : "a function call holds its process, and the app has no room for another: calls wait for it",
    );
    this.events.emit({
      type: "request",
      appId: this.app.appId,
      action: "function-busy",
      detail: { calls: sandbox.running, callers: callers.size, replaced },
    });
  }

  /**
   * A process has ended; before its calls are failed. One that ran out of memory failed everyone's
   * calls in it: its callers become suspects, as a busy process's (their next calls go apart).
   */
  ended(sandbox: Sandbox, reason: Error, moved: ReadonlySet<number> = new Set()): void {
    this.processes.delete(sandbox);
    this.moduleRequests.get(sandbox)?.ended.abort();
    if (this.sandbox === sandbox) this.sandbox = null;
    if (this.suspectSandbox === sandbox) this.suspectSandbox = null;
    if (!(reason instanceof ExecutionMemoryLimit)) return;
    this.counts.outOfMemory++;
    const callers = this.suspect(sandbox, moved);
    this.logger()?.warn(
      { appId: this.app.appId, calls: sandbox.running, callers: callers.size },
      "a function call ran its process out of memory: its callers' next calls go to a process of their own",
    );
  }

  /** The callers of a process's calls are suspects from now on (see busyLimits); answers them. */
  private suspect(sandbox: Sandbox, moved: ReadonlySet<number> = new Set()): Set<string> {
    const now = Date.now();
    if (this.suspects.size >= busyLimits.suspects)
      for (const [key, until] of this.suspects) if (until <= now) this.suspects.delete(key);
    const callers = new Set<string>();
    for (const [callId, info] of this.calls) {
      if (info.sandbox !== sandbox || moved.has(callId)) continue;
      const key = callerKey(info);
      if (key !== undefined) callers.add(key);
    }
    for (const key of callers)
      if (this.suspects.size < busyLimits.suspects || this.suspects.has(key))
        this.suspects.set(key, now + busyLimits.suspectForMs);
    return callers;
  }

  /**
   * The call's `context` text: `context.user` (id, type, data, identities and the custom data of
   * the moment) and `context.request`. All but the custom data is kept per user object while its
   * data and identities are the same objects (the stores replace them, never change them in
   * place), and the whole text while the custom data text is the same; answered at once when the
   * custom data is (the in-memory store), else a promise.
   */
  private callText(user: StoredUser | null, fetchCustomData = true): string | Promise<string> {
    if (!user) return systemCallText;
    let known = this.users.get(user);
    if (!known || known.data !== user.data || known.identities !== user.identities) {
      const text = toEJSONText({
        id: user.id,
        type: user.type,
        data: user.data,
        identities: user.identities.map((i) => ({ id: i.id, provider_type: i.provider_type })),
      });
      known = { data: user.data, identities: user.identities, head: text.slice(0, -1), custom: "", callText: "" };
      this.users.set(user, known);
    }
    const entry = known;
    if (!fetchCustomData) return withoutCustomData(entry);
    const custom = this.app.customUserDataText(user.id);
    return typeof custom === "string"
      ? withCustomData(entry, custom)
      : custom.then((text) => withCustomData(entry, text));
  }

  private async execute(fn: FunctionSource, argsText: string, info: CallInfo): Promise<string> {
    for (;;) {
      try {
        return await this.executeIn(this.sandboxFor(info), fn, argsText, info);
      } catch (error) {
        // Never written to a process seen busy meanwhile: run in another, with the time it has left.
        if (!(error instanceof CallMoved)) throw error;
      }
    }
  }

  private async executeIn(sandbox: Sandbox, fn: FunctionSource, argsText: string, info: CallInfo): Promise<string> {
    const { deadline, argsInBody } = info;
    const callText = info.principal.kind === "system" ? systemContextText(info.callText) : info.callText;
    const requestText =
      info.requestText ?? (info.request && wantsRequest(fn) ? toEJSONText(contextRequest(info.request())) : undefined);
    const { callId, result } = sandbox.run({
      fn,
      argsText,
      argsInBody,
      callText,
      requestText,
      deadline,
      endpoint: info.endpoint === true,
      clockOffsetMs: this.app.clock.offsetMs,
    });
    const ended = new AbortController();
    this.calls.set(callId, { ...info, ended: ended.signal, sandbox });
    try {
      return await result;
    } catch (error) {
      if (error instanceof CallMoved) throw error;
      if (error instanceof ExecutionTimeout) throw errors.executionTimeLimit();
      if (error instanceof ExecutionMemoryLimit) throw errors.executionMemoryLimit();
      if (error instanceof BadArguments)
        throw errors.badRequest(`invalid Extended JSON in arguments: ${error.message}`);
      throw errors.functionExecution(inServiceWords((error as Error).message));
    } finally {
      ended.abort();
      this.calls.get(callId)?.transactions?.close();
      this.calls.delete(callId);
      // (A process being debugged stays: a debugger attached to it would lose it.)
      if (this.calls.size === 0 && !this.app.functionInspector) {
        this.idleTimer = setTimeout(() => this.close(), idleProcessMs);
        this.idleTimer.unref();
      }
    }
  }

  /**
   * When a call starting now must end: the app's time limit (`functionTimeoutMs`), or, while
   * debugging, none worth the name (a call may stand at a breakpoint as long as its developer looks).
   */
  private deadline(): number {
    const limit = this.app.functionInspector
      ? FunctionInspector.timeLimitMs
      : (this.app.config.functionTimeoutMs ?? defaultFunctionTimeoutMs);
    return Date.now() + limit;
  }

  /** Stops the app's function processes (one is started again on the next call). */
  close(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    for (const sandbox of [...this.processes]) sandbox.close();
    this.processes.clear();
    this.sandbox = null;
    this.suspectSandbox = null;
  }

  /** Calls a function with canonical-EJSON arguments; answers its result as canonical EJSON text. */
  async callFromText(name: string, argsText: string, options: RunOptions): Promise<string> {
    const fn = this.resolve(name);
    if (!fn || (options.fromClient && fn.private)) throw errors.functionNotFound(name);
    const system = options.system || fn.runAsSystem;
    const checked = options.fromClient && !allowsEveryone(fn.canEvaluate);
    // (A `can_evaluate` may name `%%user.custom_data`.)
    const withCustomData = checked || wantsCustomData(fn);
    const pending = this.callText(options.user, withCustomData);
    const callText = typeof pending === "string" ? pending : await pending;
    if (checked) await this.checkCanEvaluate(fn, argsText, options, callText);
    return this.execute(fn, argsText, {
      name,
      callText,
      ...(!withCustomData && options.user ? { customDataLeftOut: options.user } : {}),
      principal:
        system || !options.user
          ? { kind: "system", ...(options.address !== undefined ? { address: options.address } : {}) }
          : {
              kind: "user",
              user: options.user,
              ...(options.request ? { request: options.request } : {}),
              ...(options.address !== undefined ? { address: options.address } : {}),
              ...(options.ruleDepth ? { ruleDepth: options.ruleDepth } : {}),
            },
      request: options.request,
      deadline: this.deadline(),
      argsInBody: options.argsInBody,
      caller: options.user?.id,
    });
  }

  /**
   * Refuses a client's call that the function's `can_evaluate` does not let through. Its
   * `%function`s run first, as the caller, with the caller's request; what one of them throws
   * is the call's error.
   */
  private async checkCanEvaluate(
    fn: FunctionSource,
    argsText: string,
    options: RunOptions,
    callText: string,
  ): Promise<void> {
    const config = this.app.config;
    const expansions: Expansions = {
      user: () => (fromEJSONText(callText) as { user: unknown }).user,
      args: () => {
        try {
          return fromEJSON(options.args ? options.args() : JSON.parse(argsText));
        } catch (error) {
          throw errors.badRequest(`invalid Extended JSON in arguments: ${(error as Error).message}`);
        }
      },
      ...appExpansions(config),
      request: options.request ?? (() => ({})),
    };
    let allowed: boolean;
    try {
      const expression = callsFunctions(fn.canEvaluate)
        ? await resolveFunctions(fn.canEvaluate, expansions, (name, args) =>
            this.run(name, args, {
              user: options.user,
              system: false,
              ...(options.request ? { request: options.request } : {}),
              ruleDepth: (options.ruleDepth ?? 0) + 1,
            }),
          )
        : fn.canEvaluate;
      allowed = evaluate(expression, expansions);
    } catch (error) {
      if (error instanceof ExpressionError) throw errors.canEvaluateUnsupported(fn.name, error.message);
      throw error;
    }
    if (!allowed) throw errors.ruleNotMatched(fn.name);
  }

  /**
   * Runs an HTTPS endpoint's function with `(request, response)` as `user` (null: as system), its
   * `can_evaluate` checked (a private function may serve an endpoint): its value (BSON-typed;
   * absent when undefined) and what it set on the response, checked (the process is not trusted).
   */
  async runEndpoint(name: string, call: EndpointCall): Promise<EndpointOutcome> {
    const fn = this.resolve(name);
    if (!fn) throw errors.functionNotFound(name);
    const system = call.user === null || fn.runAsSystem;
    const pending = this.callText(call.user, call.fetchCustomUserData);
    const callText = typeof pending === "string" ? pending : await pending;
    const argsText = `[${call.requestArgText}]`;
    if (!allowsEveryone(fn.canEvaluate))
      await this.checkCanEvaluate(
        fn,
        argsText,
        { user: call.user, system: false, request: call.expansion, args: () => [call.requestArg] },
        callText,
      );
    const text = await this.execute(fn, argsText, {
      name,
      callText,
      principal:
        system || !call.user
          ? { kind: "system", address: call.address }
          : {
              kind: "user",
              user: call.user,
              request: call.expansion,
              address: call.address,
              withoutCustomData: !call.fetchCustomUserData,
            },
      request: call.expansion,
      requestText: wantsRequest(fn) ? toEJSONText(call.contextRequest) : undefined,
      endpoint: true,
      deadline: this.deadline(),
      caller: call.user?.id,
    });
    return endpointOutcome(text);
  }

  /**
   * Checks a `can_evaluate` that is not a function's (the Data API's) for a request: refused as
   * a function's is (`rule not matched`).
   */
  async authorize(name: string, canEvaluate: unknown, user: StoredUser | null, request: () => Document): Promise<void> {
    if (allowsEveryone(canEvaluate)) return;
    const pending = this.callText(user);
    const callText = typeof pending === "string" ? pending : await pending;
    const fn: FunctionSource = {
      name,
      source: "",
      private: true,
      runAsSystem: false,
      canEvaluate,
      origin: "config",
      version: name,
    };
    await this.checkCanEvaluate(fn, "[]", { user, system: false, request, args: () => [] }, callText);
  }

  /** Calls a function with JS values (for the service's own calls: confirmation, reset, authentication). */
  async run(name: string, args: unknown[], options: RunOptions): Promise<unknown> {
    const text = await this.callFromText(name, toEJSONText(args), options);
    return EJSON.parse(text, { relaxed: true });
  }

  /**
   * The custom-function provider: the configured function maps a login's payload (given as its
   * JSON text) to an identity id.
   */
  async runAuthFunction(payloadText: string): Promise<string> {
    const name = this.app.config.providers?.["custom-function"]?.authFunctionName;
    if (!name) throw errors.providerNotEnabled("custom-function");
    let result: unknown;
    try {
      // The payload arrives as Extended JSON already; pass it through as the single argument.
      const text = await this.callFromText(name, `[${payloadText}]`, { user: null, system: true });
      result = EJSON.parse(text, { relaxed: true });
    } catch (error) {
      if ((error as { errorCode?: string }).errorCode === "FunctionNotFound") throw error;
      throw errors.customFunctionFailed((error as Error).message);
    }
    const id = typeof result === "string" ? result : (result as { id?: unknown } | null)?.id;
    if (typeof id !== "string" || id === "") throw errors.customFunctionFailed("the function must return an id string");
    if (id.length > maxIdentityIdLength)
      throw errors.customFunctionFailed(`the id it returned is longer than ${maxIdentityIdLength} characters`);
    return id;
  }

  /** Module requests of each process: what ends each, by its pending id, and what ends them all with it. */
  private readonly moduleRequests = new WeakMap<
    Sandbox,
    { going: Map<number, AbortController>; ended: AbortController }
  >();

  request(sandbox: Sandbox, callId: number, pendingId: number, kind: HostRequest, text: string): void {
    if (callId === 0 && kind === "http") {
      this.moduleRequest(sandbox, pendingId, text);
      return;
    }
    const info = this.calls.get(callId);
    if (!info) {
      sandbox.deliver(pendingId, false, "the function call has ended");
      return;
    }
    void this.answer(kind, text, info).then(
      (result) => sandbox.deliver(pendingId, true, result),
      (error: unknown) => {
        if (error instanceof TransactionFailure) sandbox.deliverServerError(pendingId, error);
        else sandbox.deliver(pendingId, false, error instanceof Error ? error.message : String(error));
      },
    );
  }

  /** An HTTP request of a process's modules (see moduleHttpLimits). */
  private moduleRequest(sandbox: Sandbox, pendingId: number, text: string): void {
    let requests = this.moduleRequests.get(sandbox);
    if (requests === undefined) {
      requests = { going: new Map(), ended: new AbortController() };
      this.moduleRequests.set(sandbox, requests);
    }
    if (requests.ended.signal.aborted) {
      sandbox.deliver(pendingId, false, "the functions' process has ended");
      return;
    }
    if (requests.going.size >= moduleHttpLimits.concurrent) {
      sandbox.deliver(pendingId, false, `at most ${moduleHttpLimits.concurrent} requests of modules at once`);
      return;
    }
    const given = new AbortController();
    const { going, ended } = requests;
    going.set(pendingId, given);
    void (async () => {
      const request = EJSON.parse(text, { relaxed: true }) as Record<string, unknown>;
      const response = await this.app.outboundHttp.send(
        String(request.method),
        request.options,
        this.deadline(),
        AbortSignal.any([ended.signal, given.signal]),
      );
      return EJSON.stringify(asDecoded(response), { relaxed: false });
    })()
      .then(
        (result) => sandbox.deliver(pendingId, true, result),
        (error: unknown) => sandbox.deliver(pendingId, false, error instanceof Error ? error.message : String(error)),
      )
      .finally(() => going.delete(pendingId));
  }

  /** A module's request given up in its process (its ClientRequest destroyed): it stops here too. */
  cancel(sandbox: Sandbox, pendingId: number): void {
    const going = this.moduleRequests.get(sandbox)?.going;
    going?.get(pendingId)?.abort();
    going?.delete(pendingId);
  }

  private async answer(kind: HostRequest, text: string, info: CallInfo): Promise<string> {
    if (kind === "mongo") return this.answerMongo(await fromEJSONTextInSlices(text), info);
    const request = EJSON.parse(text, { relaxed: true }) as Record<string, unknown>;
    if (kind === "http") {
      const response = await this.app.outboundHttp.send(
        String(request.method),
        request.options,
        info.deadline,
        info.ended,
      );
      return EJSON.stringify(response, { relaxed: false });
    }
    const name = String(request.name);
    const fn = this.resolve(name);
    if (!fn) throw new Error(`function not found: '${name}'`);
    const args = Array.isArray(request.args) ? request.args : [];
    // (The function it calls has transactions of its own.)
    const { transactions: _callers, customDataLeftOut, ...caller } = info;
    const read = customDataLeftOut !== undefined && wantsCustomData(fn);
    let callText = caller.callText;
    if (read) {
      const pending = this.callText(customDataLeftOut);
      callText = typeof pending === "string" ? pending : await pending;
    }
    return this.execute(fn, EJSON.stringify(args, { relaxed: false }), {
      ...caller,
      callText,
      ...(customDataLeftOut && !read ? { customDataLeftOut } : {}),
      name,
      principal: fn.runAsSystem ? systemAs(info.principal) : info.principal,
      endpoint: false,
    });
  }

  /**
   * A function's database request, read as the emulator reads a client's arguments (canonical
   * Extended JSON, documents.ts): an Int64 past 2^53 stays exact (read relaxed, as it was,
   * 9007199254740993 was stored as 9007199254740992), and a large request is read in slices, as
   * a large body is (a document of 200,000 fields held the main thread ~1 s).
   */
  private async answerMongo(parsed: unknown, info: CallInfo): Promise<string> {
    const request = parsed as Record<string, unknown>;
    const action = String(request.action);
    if (action === "getCollectionNames" || action === "getDBNames") return this.storeNames(action, request.args, info);
    const { transaction: key, bypassDocumentValidation, ...args } = (request.args ?? {}) as Record<string, unknown>;
    const options = { bypassDocumentValidation: bypassDocumentValidation === true, fromFunction: true };
    if (action === "abortTransaction") {
      this.transactionsOf(info).abort(key);
      return "null";
    }
    if (action === "commitTransaction") {
      const writer = writerOf(info.principal);
      try {
        await this.transactionsOf(info).commit(key, writer);
      } catch (error) {
        throw writeRefusal(error, writer);
      }
      return "null";
    }
    if (!isFunctionMongoAction(action)) throw new Error(`function not found: '${action}'`);
    if (key === undefined) return new MongoService(this.app, info.principal, options).runText(action, args);
    // An action of a transaction: over the transaction's view of the documents, after its others.
    const transaction = this.transactionsOf(info).of(key);
    const app: MongoApp = Object.create(this.app, { data: { value: transaction.documents } });
    return transaction.run(() =>
      new MongoService(app, info.principal, { ...options, inTransaction: true }).runText(action, args),
    );
  }

  /**
   * The app folder's functions/node_modules, or its uploaded archive unpacked (module-archive.ts),
   * when it has one: the packages its functions may require. (An archive not unpacked was named at
   * start: the functions find none of its packages.)
   */
  private appModules(): string | null {
    if (this.folder === null) return null;
    try {
      return functionModules(join(this.folder.dir, "functions"));
    } catch (error) {
      if (error instanceof ModuleArchiveError) return null;
      throw error;
    }
  }

  private transactionsOf(info: CallInfo): CallTransactions {
    info.transactions ??= new CallTransactions(this.app.data, this.app.appId);
    return info.transactions;
  }

  /**
   * `db.getCollectionNames()` (the collections of a database that hold documents) and
   * `admin().getDBNames()` (system functions only, as on the service), sorted.
   */
  private async storeNames(
    action: "getCollectionNames" | "getDBNames",
    args: unknown,
    info: CallInfo,
  ): Promise<string> {
    const collections = await this.app.data.collections();
    if (action === "getDBNames") {
      if (info.principal.kind !== "system") throw new Error("admin.getDBNames() is only available in system functions");
      return EJSON.stringify([...new Set(collections.map((c) => c.database))].sort());
    }
    const database = (args as { database?: unknown } | null)?.database;
    if (typeof database !== "string" || database === "") throw new Error("getCollectionNames needs a database name");
    return EJSON.stringify(
      collections
        .filter((c) => c.database === database)
        .map((c) => c.collection)
        .sort(),
    );
  }

  log(callId: number, text: string): void {
    const info = this.calls.get(callId);
    if (!info) return;
    this.events.emit({
      type: "request",
      appId: this.app.appId,
      action: "function-log",
      detail: { function: info.name, message: text.slice(0, 10_000) },
    });
  }
}

function withoutCustomData(known: KnownUser): string {
  known.bareCallText ??= callTextOf(`${known.head},"custom_data":{}}`);
  return known.bareCallText;
}

function withCustomData(known: KnownUser, custom: string): string {
  if (known.custom !== custom || known.callText === "") {
    known.custom = custom;
    known.callText = callTextOf(`${known.head},"custom_data":${custom}}`);
  }
  return known.callText;
}
