/**
 * The connection pool of the PostgreSQL store, its transactions, and what an outage looks like to
 * the rest of the emulator: every failure to reach the database (refused, cut, shut down, no free
 * connection within a few seconds) becomes one StoreUnavailableError, which requests answer as 503.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { parse as parseConnectionString } from "pg-connection-string";
import {
  AppGoneError,
  QuotaExceededError,
  quotas,
  StoreTimeoutError,
  StoreUnavailableError,
  WriteRateExceededError,
} from "../store.ts";
import { connectionUrl } from "./connection-url.ts";
import { decodeText, parseJson, toDatabase } from "./text-encoding.ts";

/**
 * Every statement is sent as a named prepared statement: each connection parses and plans it once,
 * then only binds (the hot paths — a user by id, a session, an insert — are one statement each).
 * Statement texts are few (their values are parameters); past a cap, new texts go unnamed.
 *
 * Connections are pipelined (the driver's `pipeline` mode): a transaction's BEGIN goes out with its
 * first statement, and `pipeline` sends several statements — a transaction or two — in one write
 * and waits for one round trip.
 */
const statementNames = new Map<string, string>();
const maxStatements = 1000;

/**
 * How a statement is planned: `cached` (the default) prepared once per connection, its plan kept
 * (PostgreSQL may settle on one plan for every parameter value); `custom` planned for its values
 * each time, for a statement whose best plan depends on them (an ordered read with a LIMIT: walk
 * the collection in order, or find the few matching rows by the index first). A statement whose
 * plan does not depend on its values but whose estimates do is `cached` with its values hidden
 * from the planner (pushdown.ts, `hiddenValue`), so that the plan for every value is kept.
 */
export type Planning = "cached" | "custom";

/**
 * What `send` sends on a pipelined client, in one write to the socket (each statement's own write
 * is nested in this one).
 */
function corked<T>(client: pg.ClientBase, send: () => T): T {
  const stream = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection
    ?.stream;
  stream?.cork?.();
  try {
    return send();
  } finally {
    stream?.uncork?.();
  }
}

/** Runs a statement on a client, with the planning it asks for. */
function run<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  text: string,
  values: unknown[],
  planning: Planning | undefined,
  readTimeoutMs?: number,
): Promise<pg.QueryResult<R>> {
  const config = statement(text, values, planning);
  return client.query<R>(readTimeoutMs === undefined ? config : timed(config, readTimeoutMs));
}

/** A statement the client waits `ms` at most for (node-postgres's `query_timeout`, untyped there). */
const timed = (config: pg.QueryConfig, ms: number): pg.QueryConfig =>
  ({ ...config, query_timeout: ms }) as pg.QueryConfig;

/**
 * How much longer than a statement may run the client waits for its answer: a server that stops
 * answering (frozen, or its host gone without a word) cannot end the statement by its own timeout,
 * nor answer a cancellation, so the client gives up on the connection (closed, never reused).
 */
const answerGraceMs = 1_000;

function statement(text: string, values: unknown[], planning: Planning = "cached"): pg.QueryConfig {
  let name = planning === "custom" ? undefined : statementNames.get(text);
  if (name === undefined && planning === "cached" && statementNames.size < maxStatements) {
    name = `s${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
    statementNames.set(text, name);
  }
  // Strings go in encoded (text-encoding.ts: PostgreSQL cannot hold U+0000), and the parsers below decode.
  const sent = values.map(toDatabase);
  return name === undefined ? { text, values: sent } : { name, text, values: sent };
}

/** A pool client that sends named statements too (the client of a transaction). */
class NamedClient implements Queryable {
  constructor(readonly client: pg.PoolClient) {}

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    planning?: Planning,
  ) {
    try {
      return await run<R>(this.client, text, values, planning);
    } catch (error) {
      throw translate(error);
    }
  }
}

// text[] (oid 1009: array types are not among the driver's named builtins).
const builtinParser = pg.types.getTypeParser as (oid: number, format: "text") => (value: string) => unknown;
const textArray = builtinParser(1009, "text") as (value: string) => (string | null)[];

/**
 * int8 (bigserial ids, epoch milliseconds) as numbers: every value we keep is below 2^53. Text,
 * text[] and JSON decoded (text-encoding.ts).
 */
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    switch (oid) {
      case 20:
        return (value: string) => Number(value);
      case 25: // text
      case 1043: // varchar
        return decodeText;
      case 1009: // text[]
        return (value: string) => textArray(value).map((item) => (item === null ? null : decodeText(item)));
      case 114: // json
      case 3802: // jsonb
        return parseJson;
      default:
        return pg.types.getTypeParser(oid, format as "text");
    }
  },
};

export interface DatabaseOptions {
  url: string;
  /** Connections in the pool (per instance). */
  maxConnections?: number;
  /** How long a request waits for a free connection, or for a new one to open, before it is refused. */
  connectTimeoutMs?: number;
  /** The most one statement may run (a safety net under the query limits). */
  statementTimeoutMs?: number;
  /** How long a kept trigger event stays this instance's without being renewed (trigger-events.ts). */
  triggerLeaseMs?: number;
}

/** Error codes and messages that mean the database is not there (as opposed to a bad statement). */
const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "53300", // too_many_connections
]);

export function isUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return true;
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e.code === "string" && (unavailableCodes.has(e.code) || e.code.startsWith("08"))) return true;
  const message = typeof e.message === "string" ? e.message : "";
  return /Connection terminated|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error|connection to server .* failed|Connection ended unexpectedly|Client was closed|Cannot use a pool after calling end/i.test(
    message,
  );
}

const knownQuotas = new Set<unknown>(quotas);
/** PostgreSQL's detail of a foreign key to `apps` refused (every app-scoped table has one). */
const appNotPresent = /^Key \(app_id\)=\((.*)\) is not present in table "apps"\.$/s;
const writeRates = new Set<unknown>(["writesPerSecondPerUser", "writesPerSecondPerAnonymousUser"]);

/**
 * An outage as StoreUnavailableError, a write refused by an app's limits (the usage triggers of
 * migration 3: SQLSTATE 53400, the quota as message, the limit as detail) as QuotaExceededError,
 * a row of an app deleted meanwhile (a foreign key to `apps`) as AppGoneError, anything else as it
 * is (to be thrown).
 */
export function translate(error: unknown): unknown {
  if (isUnavailable(error) && !(error instanceof StoreUnavailableError)) {
    return new StoreUnavailableError((error as Error).message);
  }
  const e = error as { code?: unknown; message?: unknown; detail?: unknown };
  // query_canceled: the statement timeout, or a read cancelled at its deadline (queryWithin).
  if (e.code === "57014") return new StoreTimeoutError(String(e.message));
  if (e.code === "53400" && knownQuotas.has(e.message))
    return new QuotaExceededError(e.message as QuotaExceededError["quota"], Number(e.detail));
  if (e.code === "53400" && writeRates.has(e.message)) return new WriteRateExceededError(Number(e.detail));
  const gone = e.code === "23503" && typeof e.detail === "string" && appNotPresent.exec(e.detail);
  if (gone) return new AppGoneError(decodeText(gone[1]!));
  return error;
}

/** `lockApp`'s statement ($1: the app), for a pipeline that sends it itself. */
export const lockAppStatement = "SELECT 1 FROM apps WHERE app_id = $1 FOR KEY SHARE";

/**
 * The app's row locked (KEY SHARE) first in a transaction that locks or changes the app's rows and
 * then adds one (whose foreign key would lock it then): a deletion of the app holding that row and
 * waiting for the others' would otherwise end in a deadlock. AppGoneError when the app is gone.
 */
export async function lockApp(q: Queryable, appId: string): Promise<void> {
  const { rowCount } = await q.query(lockAppStatement, [appId]);
  if (rowCount === 0) throw new AppGoneError(appId);
}

/** A pool client or the database itself. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    planning?: Planning,
  ): Promise<pg.QueryResult<R>>;
}

/** Rows of a query on a connection (a transaction's) or the pool. */
export async function rowsOf<R extends pg.QueryResultRow = pg.QueryResultRow>(
  q: Queryable,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  return (await q.query<R>(text, values)).rows;
}

let cursors = 0;

/**
 * Rows of a query read a batch at a time through a cursor, on `q`: a transaction's connection (a
 * cursor lives in its transaction). A batch is `batch` rows, or, with `{ chars, of }`, about
 * `chars` by the sizes `of` tells of the rows read so far (16 rows first: rows may be large). The
 * cursor is closed when the rows end or the reading stops.
 */
export async function* cursorRows<R extends pg.QueryResultRow = pg.QueryResultRow>(
  q: Queryable,
  text: string,
  values: unknown[],
  batch: number | { chars: number; of(row: R): number } = 500,
): AsyncGenerator<R[]> {
  const name = `rows_${++cursors}`;
  await q.query(`DECLARE ${name} NO SCROLL CURSOR FOR ${text}`, values, "custom");
  let size = typeof batch === "number" ? batch : 16;
  let open = true;
  try {
    while (open) {
      const { rows } = await q.query<R>(`FETCH ${size} FROM ${name}`, [], "custom");
      open = rows.length === size;
      if (rows.length > 0) {
        if (typeof batch !== "number") {
          const chars = rows.reduce((sum, row) => sum + batch.of(row), 0);
          size = Math.max(1, Math.min(1_000, Math.floor((batch.chars * rows.length) / Math.max(1, chars))));
        }
        yield rows;
      }
    }
  } finally {
    // (Stopped early: closed. A transaction that failed ends with its cursors.)
    if (open) await q.query(`CLOSE ${name}`, [], "custom").catch(() => undefined);
  }
}

/** A unique-constraint violation (the store's way of deciding races). */
export const isUniqueViolation = (error: unknown) => (error as { code?: unknown }).code === "23505";

/** Pool connections that have an error listener of ours (see Database.connect). */
const heard = new WeakSet<pg.PoolClient>();

export class Database implements Queryable {
  readonly pool: pg.Pool;
  /** One connection of its own for `ping`, so a busy pool is not taken for an unreachable database. */
  private readonly pinger: pg.Pool;
  private closed = false;

  constructor(readonly options: DatabaseOptions) {
    const statementTimeout = options.statementTimeoutMs ?? 10_000;
    const settings = {
      connectionString: connectionUrl(options.url),
      connectionTimeoutMillis: options.connectTimeoutMs ?? 3_000,
      idleTimeoutMillis: 30_000,
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + answerGraceMs,
      // A peer gone without a word (its host down, a network partition) is noticed by TCP.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: "app-services-emulator",
      types,
    };
    // (pg-pool hands its options to each client.)
    this.pool = new pg.Pool({ ...settings, max: options.maxConnections ?? 20, pipeline: true });
    this.pinger = new pg.Pool({ ...settings, max: 1 });
    // An idle connection that breaks (the server went away) must not take the process down; the
    // next request gets a new connection, or the outage answer.
    this.pool.on("error", () => undefined);
    this.pinger.on("error", () => undefined);
  }

  /**
   * Whether the database answers within `ms`, on a connection of its own (readiness): null, or
   * why not. A pool busy with slow statements is not an outage, and a frozen server is one.
   */
  async ping(ms: number): Promise<string | null> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${ms} ms`), ms);
    });
    try {
      return await Promise.race([
        this.pinger.query(timed({ text: "SELECT 1" }, ms)).then(
          () => null,
          (error: unknown) => (error as Error).message,
        ),
        late,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[] = [],
    planning?: Planning,
  ): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(statement(text, values, planning));
    } catch (error) {
      throw translate(error);
    }
  }

  /**
   * Runs a statement on a pool connection and gives it back (not a broken one, nor one `closing`
   * says must be closed).
   */
  private async runReleasing<R extends pg.QueryResultRow>(
    client: pg.PoolClient,
    text: string,
    values: unknown[],
    planning: Planning | undefined,
    closing: () => Error | undefined = () => undefined,
    readTimeoutMs?: number,
  ): Promise<pg.QueryResult<R>> {
    let failure: unknown;
    try {
      return await run<R>(client, text, values, planning, readTimeoutMs);
    } catch (error) {
      failure = error;
      throw translate(error);
    } finally {
      client.release(closing() ?? (failure && isUnavailable(failure) ? (failure as Error) : undefined));
    }
  }

  /**
   * A statement that is cancelled if it still runs after `ms` (StoreTimeoutError): a read an action
   * stops waiting for at its deadline. The cancellation goes the protocol's way (its own short
   * connection, the backend's secret key: no pool connection needed, no other backend reached),
   * and a connection that was sent one is closed rather than given back, so it can never reach
   * the next statement on that connection.
   */
  async queryWithin<R extends pg.QueryResultRow = pg.QueryResultRow>(
    ms: number,
    text: string,
    values: unknown[] = [],
    planning?: Planning,
  ): Promise<pg.QueryResult<R>> {
    if (ms <= 0) throw new StoreTimeoutError("the deadline had passed");
    const client = await this.connect();
    let cancelled = false;
    const timer = setTimeout(() => {
      cancelled = true;
      // A CancelRequest with the backend's key on a connection of its own, as node-postgres's
      // Client.cancel sends it, without its check of the deprecated `activeQuery` (which prints a
      // deprecation warning): whatever the backend runs is this statement, as its connection is
      // checked out and not given back. One that cannot be sent leaves the statement to the
      // statement timeout.
      const target = client as unknown as { processID: number; secretKey: number };
      const canceller = new pg.Client({ connectionString: connectionUrl(this.options.url) }) as unknown as {
        host: string;
        port: number;
        connection: {
          on(event: "error" | "connect", listener: () => void): void;
          connect(port: number | string, host?: string): void;
          cancel(processID: number, secretKey: number): void;
        };
      };
      const connection = canceller.connection;
      connection.on("error", () => undefined);
      connection.on("connect", () => connection.cancel(target.processID, target.secretKey));
      if (canceller.host?.startsWith("/")) connection.connect(`${canceller.host}/.s.PGSQL.${canceller.port}`);
      else connection.connect(canceller.port, canceller.host);
    }, ms);
    try {
      return await this.runReleasing<R>(
        client,
        text,
        values,
        planning,
        () => (cancelled ? new Error("cancelled") : undefined),
        // A server that answers neither the statement nor its cancellation: past the deadline.
        Math.ceil(ms) + answerGraceMs,
      );
    } catch (error) {
      if (cancelled && error instanceof StoreUnavailableError && /Query read timeout/.test(error.message))
        throw new StoreTimeoutError("the database answered neither the statement nor its cancellation");
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A connection of the pool (an outage: StoreUnavailableError). The pool listens for errors of its
   * idle connections only: one that breaks while checked out between two statements (a pipelined
   * group, a transaction; the server restarted) emits its error on the connection, which would
   * take the process down unheard. The statements on it fail by themselves, and it is given back
   * broken, so the pool drops it.
   */
  private async connect(): Promise<pg.PoolClient> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw translate(error);
    }
    if (!heard.has(client)) {
      heard.add(client);
      client.on("error", () => undefined);
    }
    return client;
  }

  /** Rows of a query. */
  async rows<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
    return rowsOf<R>(this, text, values);
  }

  /**
   * Runs `fn` in a transaction: committed when it returns (the promise resolves only then), rolled
   * back when it throws.
   */
  async transaction<T>(fn: (client: Queryable) => Promise<T>): Promise<T> {
    const tx = await this.begin();
    try {
      const result = await fn(tx.client);
      await tx.commit();
      return result;
    } catch (error) {
      await tx.rollback();
      throw translate(error);
    }
  }

  /**
   * A transaction to finish with `commit` or `rollback` (each gives the connection back; one broken
   * meanwhile is not given back to the pool, and an outage is thrown as StoreUnavailableError).
   */
  async begin(begin = "BEGIN"): Promise<{ client: Queryable; commit(): Promise<void>; rollback(): Promise<void> }> {
    const client = await this.connect();
    let done = false;
    const release = (error?: unknown) => {
      if (done) return;
      done = true;
      client.release(error ? (error as Error) : undefined);
    };
    // Sent without waiting: the transaction's first statement follows it in the same round trip
    // (a BEGIN that fails fails that statement too; commit reports it).
    const begun = client.query(begin).then(
      () => null,
      (error: unknown) => error,
    );
    return {
      client: new NamedClient(client),
      async commit() {
        try {
          const failed = await begun;
          if (failed) throw failed;
          await client.query("COMMIT");
          release();
        } catch (error) {
          release(error);
          throw translate(error);
        }
      },
      async rollback() {
        if (done) return;
        try {
          await client.query("ROLLBACK");
          release();
        } catch (error) {
          release(error);
        }
      },
    };
  }

  /**
   * Runs statements on one connection in one round trip: written together (the connection is
   * pipelined), then their answers read together. Each runs as the protocol has it — in its own
   * implicit transaction unless between BEGIN and COMMIT — so one failing does not stop the ones
   * after it, outside a transaction. Answers each one's result or (translated) error, in order.
   */
  async pipeline(
    statements: [text: string, values: unknown[]][],
  ): Promise<{ result?: pg.QueryResult; error?: unknown }[]> {
    const client = await this.connect();
    const sent = corked(client, () =>
      statements.map(([text, values]) =>
        client.query(statement(text, values)).then(
          (result): { result?: pg.QueryResult; error?: unknown } => ({ result }),
          (error: unknown) => ({ error: translate(error) }),
        ),
      ),
    );
    const answers = await Promise.all(sent);
    const broken = answers.find((a) => a.error instanceof StoreUnavailableError);
    client.release(broken ? (broken.error as Error) : undefined);
    return answers;
  }

  /**
   * A read-only transaction at one snapshot (REPEATABLE READ): its reads see the database at one
   * moment, whatever commits while they run. Finish it with `rollback` (or `commit`).
   */
  beginSnapshot(): ReturnType<Database["begin"]> {
    return this.begin("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
  }

  /**
   * Closes the pools once the statements under way and those waiting for a connection are done
   * (at most `settleMs`): a pool ended under a request that waited for a connection — one still in
   * flight as the server stopped — gave it none, and it answered 503 after the connect timeout (a
   * rolling restart's request, in the rehearsal).
   */
  async close(settleMs = 5_000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const busy = () => this.pool.waitingCount > 0 || this.pool.totalCount > this.pool.idleCount;
    const until = performance.now() + settleMs;
    while (busy() && performance.now() < until) await new Promise((resolve) => setTimeout(resolve, 10));
    await Promise.all([this.pool.end(), this.pinger.end()]);
  }
}

/** The client settings of the pool, for a separate (LISTEN) connection. */
export function clientConfig(options: DatabaseOptions): pg.ClientConfig {
  return {
    connectionString: connectionUrl(options.url),
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3_000,
    application_name: "app-services-emulator-listener",
    // A server that vanishes without closing the connection (a partition) is noticed too.
    keepAlive: true,
    keepAliveInitialDelayMillis: 5_000,
    types,
  };
}

/** Certificate errors of a TLS connection to the database (Node's codes), and what to do about each. */
const certificateAdvice: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: "trust",
  SELF_SIGNED_CERT_IN_CHAIN: "trust",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "trust",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "trust",
  UNABLE_TO_GET_ISSUER_CERT: "trust",
  CERT_UNTRUSTED: "trust",
  ERR_TLS_CERT_ALTNAME_INVALID: "name",
};

/** An error reaching the database, with what to do when it is its certificate (else as it is). */
export function reachError(error: unknown): string {
  const { message, code } = error as { message: string; code?: string };
  const advice = code === undefined ? undefined : certificateAdvice[code];
  if (advice === "trust")
    return `${message} (the database's certificate is not one this server trusts: name the authority that signed it with sslrootcert=<file> in the URL)`;
  if (advice === "name")
    return `${message} (connect by a name the database's certificate holds; to check its authority only: uselibpqcompat=true&sslmode=verify-ca with sslrootcert=<file>)`;
  return message;
}

/** `host:port/database` of a URL (a Unix socket's folder as its host), without credentials, for messages. */
export function describeUrl(url: string): string {
  try {
    const { host, port, database } = parseConnectionString(connectionUrl(url));
    return `${host || "localhost"}${port ? `:${port}` : ""}/${database ?? ""}`;
  } catch {
    return "the database";
  }
}
