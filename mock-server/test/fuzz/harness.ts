/**
 * Runs fuzz cases against a listening emulator over real HTTP, one at a time, each with a deadline
 * (a hang is a failure): fills in the placeholders, makes the case's token, sends the request, reads
 * the reply (an event stream only until its first bytes, then hangs up), and checks it with the
 * oracle. Between cases it repairs the fixtures a case may have deleted or changed (apps, the user,
 * faults, clocks), and checks that no prototype was polluted. At the end: every stream closed,
 * nothing left in flight, the emulator still answering; and no uncaught error all along.
 */
import { Agent, request as httpRequest } from "node:http";
import { isDeepStrictEqual } from "node:util";
import { EJSON } from "bson";
import type { FastifyInstance } from "fastify";
import { Hs256Key } from "../../src/state/jwt.ts";
import { testApp } from "../helpers/app.ts";
import { until } from "../helpers/until.ts";
import { encodePart, placeholders as P } from "./cases.ts";
import type { BodySpec, FuzzCase, TokenSpec } from "./fuzz-case.ts";
import { contractProblem, type Reply, unmatchedProblem } from "./oracle.ts";
import { semanticCorpus, semanticNamespace, upsertNamespace } from "./semantics.ts";

const base = "/api/client/v2.0";
const fuzzApp = "fuzz-app";
const otherApp = "local-app";
const fuzzAccount = "fuzz-public-key";
const fuzzEmail = "fuzz-user@example.com";
const fuzzPassword = "fuzz-password-1";
const requestTimeoutMs = 15_000;
const corpusText = EJSON.stringify(semanticCorpus, { relaxed: false });

export interface FuzzStats {
  cases: number;
  byOperation: Record<string, number>;
  byStatus: Record<string, number>;
  byMutation: Record<string, number>;
  /** Answered by Node's HTTP layer before the emulator saw the request (431: a head over its 64 KiB limit). */
  beforeRouting: number;
}

interface Session {
  access_token: string;
  refresh_token: string;
}

const b64url = (value: unknown) =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
const payloadOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()) as Record<string, unknown>;

export class FuzzHarness {
  readonly stats: FuzzStats = { cases: 0, byOperation: {}, byStatus: {}, byMutation: {}, beforeRouting: 0 };
  /** Errors no request caught (a crash of the emulator, were it its own process). */
  readonly uncaught: string[] = [];
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  private caseNumber = 0;
  private userId = "";
  private apiKeyId = "";
  private apiKeySecret = "";
  private listenersAtStart = 0;
  private readonly onUncaught = (error: unknown) => {
    this.uncaught.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
  };

  private constructor(
    readonly app: FastifyInstance,
    readonly url: string,
    private readonly matched: Map<string, string | null>,
  ) {}

  /** `options` go to testApp (a `databaseUrl` puts the emulator on PostgreSQL outside vitest). */
  static async start(options: Parameters<typeof testApp>[0] = {}): Promise<FuzzHarness> {
    const app = await testApp(options);
    const matched = new Map<string, string | null>();
    // Which operation each request reached (routing is the server's: the fuzzer does not guess it).
    // onSend runs for every reply, errors included (an onRequest hook added here would run after the
    // areas' own hooks, which may refuse the request first); a change stream is written raw instead.
    app.addHook("onSend", (request, _reply, payload, done) => {
      const id = request.headers["x-fuzz-case"];
      if (typeof id === "string") matched.set(id, request.routeOptions.config?.operationId ?? null);
      done(null, payload);
    });
    await app.listen({ host: "127.0.0.1", port: 0 });
    const address = app.server.address();
    if (address === null || typeof address !== "object") throw new Error("not listening");
    const harness = new FuzzHarness(app, `http://127.0.0.1:${address.port}`, matched);
    process.on("uncaughtException", harness.onUncaught);
    process.on("unhandledRejection", harness.onUncaught);
    await harness.ensureFixtures(true);
    harness.listenersAtStart = app.emulator.events.size;
    return harness;
  }

  async close(): Promise<void> {
    process.off("uncaughtException", this.onUncaught);
    process.off("unhandledRejection", this.onUncaught);
    this.agent.destroy();
    await this.app.close();
  }

  private async inject(method: string, url: string, payload?: unknown, token?: string) {
    const response = await this.app.inject({
      method: method as "GET",
      url,
      ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}),
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
    return {
      status: response.statusCode,
      body: response.body ? (JSON.parse(response.body) as Record<string, unknown>) : {},
    };
  }

  /** The apps, user, API key and EmailJS account cases refer to; rebuilt when a case removed or changed them. */
  private async ensureFixtures(force = false): Promise<void> {
    const { emulator } = this.app;
    // The other app is signed in to anonymously hundreds of times a run too.
    const other = await emulator.apps.get(otherApp);
    if (other?.config.limits?.anonymousUsersPerAddress !== 1_000_000)
      await emulator.apps.upsert({ appId: otherApp, overrides: { limits: { anonymousUsersPerAddress: 1_000_000 } } });
    let app = await emulator.apps.get(fuzzApp);
    if (force || !app) {
      if (app) await emulator.apps.delete(fuzzApp);
      app = await emulator.apps.create({
        appId: fuzzApp,
        overrides: {
          providers: { "custom-token": { enabled: true }, "custom-function": { enabled: true } },
          functionTimeoutMs: 2000,
          // Every case signs in anonymously from one address, thousands a run.
          limits: { anonymousUsersPerAddress: 1_000_000 },
          // The semantic cases' collections (semantics.ts), whatever the template's default rule.
          rules: {
            [`${semanticNamespace.database}.${semanticNamespace.collection}`]: { read: true, write: true },
            [`${upsertNamespace.database}.${upsertNamespace.collection}`]: { read: true, write: true },
          },
        },
      });
    }
    // The documents the semantic cases' expected answers are computed from, as they were (compared
    // with their types and in natural order, so it works on either store).
    const { database, collection } = semanticNamespace;
    const stored = await app.data.read(database, collection, {});
    if (EJSON.stringify(stored, { relaxed: false }) !== corpusText) {
      const path = `/_mock/v1/apps/${fuzzApp}/data/${database}/${collection}`;
      await this.inject("DELETE", path);
      const inserted = await this.inject("POST", path, {
        documents: EJSON.serialize(semanticCorpus, { relaxed: false }),
      });
      if (inserted.status !== 201) throw new Error(`could not restore the corpus: ${JSON.stringify(inserted.body)}`);
    }
    const user = await app.users.get(this.userId);
    if (force || !user || user.disabled || !(await app.users.accountByEmail(fuzzEmail))) {
      if (user) await app.store.deleteUser(user.id);
      const existing = await app.users.accountByEmail(fuzzEmail);
      if (existing) await app.users.removeAccount(existing.id);
      const created = await this.inject("POST", `/_mock/v1/apps/${fuzzApp}/users`, {
        email: fuzzEmail,
        password: fuzzPassword,
        confirmed: true,
      });
      this.userId = String(created.body.id);
      this.apiKeyId = "";
    }
    if (!this.apiKeyId || !(await app.apiKeys.get(this.apiKeyId))) {
      // Cases may have used up the user's 20 keys.
      for (const key of await app.apiKeys.forUser(this.userId)) await app.apiKeys.remove(key.id);
      const session = await this.userSession();
      const key = await this.inject(
        "POST",
        `${base}/auth/api_keys`,
        { name: `fuzz-${this.caseNumber}` },
        session.access_token,
      );
      this.apiKeyId = String(key.body._id ?? "");
      this.apiKeySecret = String(key.body.key ?? "");
    }
    if (!(await emulator.emailjs.get(fuzzAccount))) {
      await emulator.emailjs.create({ publicKey: fuzzAccount, rateLimitPerSecond: 0, allowNonBrowser: true });
    }
    // Effects that would turn later cases' answers into the fault's (or expire every token).
    for (const a of await emulator.apps.list()) {
      a.faults.clear();
      if (a.clock.offsetMs !== 0) a.clock.set(0);
    }
    for (const account of await emulator.emailjs.list()) {
      account.faults.clear();
      if (account.clock.offsetMs !== 0) account.clock.set(0);
    }
    // Apps created by cases: keep a few (their function workers cost memory).
    const extra = (await emulator.apps.list()).filter((a) => a.appId !== fuzzApp && a.appId !== otherApp);
    for (const a of extra.slice(0, Math.max(0, extra.length - 5))) await emulator.apps.delete(a.appId);
  }

  private async anonymous(appId: string): Promise<Session> {
    const login = await this.inject("POST", `${base}/app/${appId}/auth/providers/anon-user/login`, {});
    return login.body as unknown as Session;
  }

  private async userSession(): Promise<Session> {
    const login = await this.inject("POST", `${base}/app/${fuzzApp}/auth/providers/local-userpass/login`, {
      username: fuzzEmail,
      password: fuzzPassword,
    });
    return login.body as unknown as Session;
  }

  /** What placeholders stand for now: the newest token and message, the fuzz app's domain. */
  private current = { token: undefined as { token: string; tokenId: string } | undefined, mail: "m-1", domain: "" };

  private async refreshPlaceholders(): Promise<void> {
    const app = (await this.app.emulator.apps.get(fuzzApp))!;
    const token = (await app.authTokens.list()).at(-1);
    const mail = (await this.app.emulator.store.mail.list()).at(-1);
    this.current = { token, mail: mail?.id ?? "m-1", domain: app.domainId };
  }

  private fill(text: string): string {
    const { token, mail, domain } = this.current;
    return text
      .replaceAll(P.app, fuzzApp)
      .replaceAll(P.otherApp, otherApp)
      .replaceAll(P.user, this.userId)
      .replaceAll(P.apiKey, this.apiKeyId)
      .replaceAll(P.apiKeySecret, this.apiKeySecret)
      .replaceAll(P.publicKey, fuzzAccount)
      .replaceAll(P.mail, mail)
      .replaceAll(P.email, fuzzEmail)
      .replaceAll(P.password, fuzzPassword)
      .replaceAll(P.token, token?.token ?? "no-token")
      .replaceAll(P.tokenId, token?.tokenId ?? "000000000000000000000000")
      .replaceAll("@@DOMAIN@@", domain);
  }

  private async token(spec: TokenSpec): Promise<string | null> {
    const key = this.app.emulator.tokenKey;
    switch (spec.kind) {
      case "none":
        return null;
      case "access":
        return (await this.anonymous(fuzzApp)).access_token;
      case "refresh":
      case "refresh-as-access":
        return (await this.anonymous(fuzzApp)).refresh_token;
      case "user-access":
        return (await this.userSession()).access_token;
      case "user-refresh":
        return (await this.userSession()).refresh_token;
      case "other-app-access":
        return (await this.anonymous(otherApp)).access_token;
      case "expired": {
        const claims = payloadOf((await this.anonymous(fuzzApp)).access_token);
        return key.sign({ ...claims, exp: Number(claims.iat) - 1 });
      }
      case "alg-none": {
        const valid = (await this.anonymous(fuzzApp)).access_token;
        return `${b64url({ alg: "none", typ: "JWT" })}.${valid.split(".")[1]}.`;
      }
      case "forged-signature": {
        const valid = (await this.anonymous(fuzzApp)).access_token;
        return `${valid.slice(0, -4)}${valid.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
      }
      case "wrong-secret":
        return new Hs256Key("not the emulator's secret").sign(payloadOf((await this.anonymous(fuzzApp)).access_token));
      case "garbage":
        return "not-a-jwt";
      case "empty-bearer":
        return "";
      case "basic":
        return "\u0000basic";
      case "huge":
        // Well under the server's 64 KiB head limit (past it Node itself answers 431 before the emulator sees anything).
        return `${b64url({ alg: "HS256" })}.${"a".repeat(8000)}.sig`;
      case "extra-segment":
        return `${(await this.anonymous(fuzzApp)).access_token}.extra`;
      case "bad-payload":
        return `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url("not json")}.${b64url("sig")}`;
      case "claims":
        return key.sign(JSON.parse(this.fill(JSON.stringify(spec.claims ?? {}))) as Record<string, unknown>);
    }
  }

  private body(spec: BodySpec): Buffer | null {
    switch (spec.kind) {
      case "none":
        return null;
      case "text":
        return Buffer.from(this.fill(spec.text));
      case "deep":
        return Buffer.from(
          spec.open === "["
            ? `${"[".repeat(spec.depth)}${"]".repeat(spec.depth)}`
            : `${'{"a":'.repeat(spec.depth)}1${"}".repeat(spec.depth)}`,
        );
      case "huge": {
        if (spec.shape === "garbage") return Buffer.alloc(spec.bytes, 0x7b);
        if (spec.shape === "array") {
          const count = Math.floor(spec.bytes / 2);
          return Buffer.from(`[${"1,".repeat(count - 1)}1]`);
        }
        const filler = "x".repeat(Math.max(0, spec.bytes - 120));
        return Buffer.from(
          JSON.stringify({
            name: "insertOne",
            service: "mongodb-atlas",
            arguments: [{ database: "fuzz", collection: "big", document: { filler } }],
            email: fuzzEmail,
            password: filler,
            user_id: fuzzAccount,
            template_params: { filler },
          }),
        );
      }
      case "json": {
        let text = this.fill(JSON.stringify(spec.value) ?? "null");
        const inject = spec.inject;
        if (inject?.kind === "proto" && text.startsWith("{"))
          text = `{${inject.payload}${text.length > 2 ? "," : ""}${text.slice(1)}`;
        else if (inject?.kind === "truncate") text = text.slice(0, inject.keep % Math.max(1, text.length));
        else if (inject?.kind === "trailing") text = `${text}${inject.garbage}`;
        else if (inject?.kind === "duplicate-key" && text.startsWith("{") && text.length > 2) {
          const first = /^\{("(?:[^"\\]|\\.)*"):/.exec(text)?.[1];
          if (first) text = `{${first}:{"dup":true},${text.slice(1)}`;
        }
        return Buffer.from(text);
      }
      case "multipart":
        return null; // built with its boundary in `send`
    }
  }

  private multipart(spec: Extract<BodySpec, { kind: "multipart" }>): { body: Buffer; contentType: string } {
    const boundary = "----fuzz7MA4YWxkTrZu0gW";
    const eol = spec.corruption === "bare-lf" ? "\n" : "\r\n";
    let parts = spec.parts.map((p) => ({ ...p, value: this.fill(p.value) }));
    if (spec.corruption === "too-many-parts") {
      parts = [...parts, ...Array.from({ length: 1100 }, (_, i) => ({ name: `f${i}`, value: "x" }))];
    }
    let text = "";
    for (const part of parts) {
      text += `--${boundary}${eol}`;
      if (spec.corruption !== "no-disposition") {
        const name = part.name.replaceAll('"', "%22").replace(/[\r\n]/g, " ");
        const file = part.filename !== undefined ? `; filename="${part.filename.replace(/[\r\n"]/g, "_")}"` : "";
        text += `Content-Disposition: form-data; name="${name}"${file}${eol}`;
      }
      if (part.contentType) text += `Content-Type: ${part.contentType}${eol}`;
      text += `${eol}${part.value}${eol}`;
    }
    if (spec.corruption !== "no-final-boundary") text += `--${boundary}--${eol}`;
    if (spec.corruption === "truncated") text = text.slice(0, Math.floor(text.length / 2));
    const declared =
      spec.corruption === "wrong-boundary"
        ? "multipart/form-data; boundary=somethingelse"
        : spec.corruption === "no-boundary-param"
          ? "multipart/form-data"
          : `multipart/form-data; boundary=${boundary}`;
    return { body: Buffer.from(text, "utf8"), contentType: declared };
  }

  /** Runs one case; returns what is wrong with the emulator's behaviour, or null. */
  async run(c: FuzzCase): Promise<string | null> {
    try {
      return await this.runCase(c);
    } catch (error) {
      // The fuzzer's own failure (it must not end the run silently).
      return `the fuzzer failed on ${describe(c)}: ${(error as Error).stack ?? error}`;
    }
  }

  private async runCase(c: FuzzCase): Promise<string | null> {
    const id = String(++this.caseNumber);
    this.stats.cases++;
    this.stats.byOperation[c.target ?? "(unmatched)"] = (this.stats.byOperation[c.target ?? "(unmatched)"] ?? 0) + 1;
    this.stats.byMutation[c.mutation] = (this.stats.byMutation[c.mutation] ?? 0) + 1;
    await this.refreshPlaceholders();
    const token = await this.token(c.token);
    const query = c.query.map(([k, v]) => [k, this.fill(v)] as [string, string]);
    if (token !== null && (c.token.placement === "query" || c.token.placement === "both"))
      query.push(["baas_at", token]);
    const search = query.length > 0 ? `?${query.map(([k, v]) => `${encodePart(k)}=${encodePart(v)}`).join("&")}` : "";
    const path = `${this.fill(c.path)}${search}`;
    const headers: Record<string, string> = { "x-fuzz-case": id };
    if (token !== null && c.token.placement !== "query") {
      headers.authorization = c.token.kind === "basic" ? "Basic dXNlcjpwYXNz" : `Bearer ${token}`;
    }
    if (c.origin) headers.origin = c.origin;
    let body: Buffer | null;
    let contentType = c.contentType;
    if (c.body.kind === "multipart") {
      const form = this.multipart(c.body);
      body = form.body;
      if (contentType?.startsWith("multipart/")) contentType = form.contentType;
    } else {
      body = this.body(c.body);
    }
    if (contentType) headers["content-type"] = contentType;

    let reply: Reply;
    try {
      reply = await this.send(c.method, path, headers, body);
    } catch (error) {
      return `${c.method} ${path.slice(0, 200)}: ${(error as Error).message}`;
    }
    this.stats.byStatus[reply.status] = (this.stats.byStatus[reply.status] ?? 0) + 1;
    const stream = String(reply.headers["content-type"] ?? "").startsWith("text/event-stream");
    const reached = this.matched.get(id) ?? (stream && reply.status === 200 ? c.target : undefined);
    this.matched.delete(id);
    let problem: string | null = null;
    if (reached) problem = contractProblem(reached, reply);
    else if (reached === null || c.target === null) problem = unmatchedProblem(path, reply);
    // Answered before any route or hook ran: only Node's own 431 for a request head over its 64 KiB
    // limit (counted in the statistics). Every path is routed, malformed or long (http/request-targets.ts).
    else if (reply.status === 431) this.stats.beforeRouting++;
    else problem = `${c.method} ${path.slice(0, 200)} answered ${reply.status} before routing`;
    if (problem) return `${problem}\n  case: ${describe(c)}`;
    if (c.expect !== undefined) {
      let body: unknown;
      try {
        body = JSON.parse(reply.body);
      } catch {
        body = reply.body;
      }
      if (reply.status !== 200 || !isDeepStrictEqual(body, c.expect)) {
        return `${c.mutation}: answered ${reply.status} ${reply.body.slice(0, 300)}, expected ${JSON.stringify(c.expect).slice(0, 300)}\n  case: ${describe(c)}`;
      }
    }

    if (Object.keys(Object.prototype).length > 0 || ({} as { polluted?: unknown }).polluted !== undefined) {
      return `Object.prototype was polluted by ${describe(c)}`;
    }
    if (this.uncaught.length > 0) return `uncaught error during ${describe(c)}: ${this.uncaught.join("\n")}`;
    await this.ensureFixtures(
      reply.status < 300 &&
        ["importState", "applyConfig", "resetApp", "deleteApp", "removeUser", "updateUser", "deleteUser"].includes(
          reached ?? "",
        ),
    );
    return null;
  }

  private send(method: string, path: string, headers: Record<string, string>, body: Buffer | null): Promise<Reply> {
    const target = new URL(this.url);
    return new Promise<Reply>((resolve, reject) => {
      const req = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          method,
          path,
          agent: this.agent,
          headers: { ...headers, ...(body ? { "content-length": String(body.length) } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const stream = String(res.headers["content-type"] ?? "").startsWith("text/event-stream");
          const done = () => {
            clearTimeout(timer);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString("utf8"),
            });
          };
          if (stream) {
            // A change stream or the event stream stays open: take what is there, then hang up.
            setImmediate(() => {
              res.destroy();
              req.destroy();
              done();
            });
            return;
          }
          res.on("data", (chunk: Buffer) => {
            size += chunk.length;
            // Whole replies are checked against their schema (a full journal can be tens of MB).
            if (size <= 256 * 1024 * 1024) chunks.push(chunk);
          });
          res.on("end", done);
          res.on("error", (error) => {
            clearTimeout(timer);
            reject(error);
          });
        },
      );
      const timer = setTimeout(() => {
        req.destroy(new Error(`no complete answer within ${requestTimeoutMs} ms (a hang)`));
      }, requestTimeoutMs);
      req.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      req.end(body ?? undefined);
    });
  }

  /** After the last case: nothing left open or in flight, and the emulator still answers. */
  async finish(): Promise<string[]> {
    const problems: string[] = [];
    const { emulator } = this.app;
    const open = () =>
      emulator.apps.loaded().reduce((n, a) => n + a.watchers + a.inFlight, 0) +
      Math.max(0, emulator.events.size - this.listenersAtStart) +
      emulator.store.mail.pendingWaits;
    // Whatever is still open after the wait is reported below.
    await until(() => open() === 0, "streams and waits to close", { timeoutMs: 10_000 }).catch(() => undefined);
    for (const a of emulator.apps.loaded()) {
      if (a.watchers !== 0) problems.push(`app ${a.appId}: ${a.watchers} change streams still open`);
      if (a.inFlight !== 0) problems.push(`app ${a.appId}: ${a.inFlight} requests still counted in flight`);
    }
    if (emulator.events.size > this.listenersAtStart)
      problems.push(`${emulator.events.size} event-stream listeners left`);
    if (emulator.store.mail.pendingWaits > 0) problems.push(`${emulator.store.mail.pendingWaits} mail waits left`);
    const health = await this.send("GET", "/_mock/v1/health", {}, null).catch((error: Error) => ({
      status: 0,
      body: error.message,
    }));
    if (health.status !== 200) problems.push(`the emulator stopped answering: ${health.status} ${health.body}`);
    if (this.uncaught.length > 0) problems.push(...this.uncaught.map((u) => `uncaught: ${u}`));
    return problems;
  }
}

/** A case in a line (placeholders and all), to reproduce it. */
export function describe(c: FuzzCase): string {
  const text = JSON.stringify({ ...c, body: c.body.kind === "huge" ? { ...c.body } : c.body });
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}
