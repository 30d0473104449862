/**
 * A fresh emulator per test file (or test), driven with inject(); nothing listens. In the vitest
 * project `postgres` (TEST_STORE=postgres) each one gets its own PostgreSQL database, so the same
 * test files check both stores.
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, expect, vi } from "vitest";
import { buildApp } from "../../src/app.ts";
import { deepMerge } from "../../src/config/app-config.ts";
import type { StoredSession } from "../../src/store/store.ts";
import { checkEvents } from "./checked-events.ts";
import { expectContract } from "./contract.ts";
import { emulatorDatabase } from "./postgres.ts";

/** Which store the tests of this project use (read per call: workers keep modules across files). */
export const testStore = () => (process.env.TEST_STORE === "postgres" ? "postgres" : "memory");

export async function testApp(options: Parameters<typeof buildApp>[0] = {}): Promise<FastifyInstance> {
  // Cost 4 keeps password hashing cheap in tests; the format is the same at every cost.
  const base = { logLevel: "silent" as const, watchFunctions: false, passwordHashCost: 4, ...options };
  if (testStore() === "memory" || options.emulator || options.databaseUrl !== undefined) {
    const app = await buildApp(base);
    checkEvents(app);
    return app;
  }
  const database = await emulatorDatabase();
  const app = await buildApp({
    ...base,
    databaseUrl: database.url,
    signingSecret: base.signingSecret ?? "a-test-signing-secret-of-32-chars",
  });
  app.addHook("onClose", async () => {
    await app.emulator.store.close();
    await database.drop();
  });
  checkEvents(app);
  return app;
}

export const base = "/api/client/v2.0";

/** inject() plus the contract check of the operation; returns the response and its parsed body. */
export async function call(
  app: FastifyInstance,
  operationId: string,
  options: InjectOptions,
): Promise<{ response: LightMyRequestResponse; body: any }> {
  const response = await app.inject(options);
  return { response, body: expectContract(operationId, response) };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A new app namespace (through the control API) for one test. */
export async function newApp(app: FastifyInstance, config?: Record<string, unknown>): Promise<string> {
  const { body } = await call(app, "createApp", {
    method: "POST",
    url: "/_mock/v1/apps",
    payload: config ? { config } : {},
  });
  return body.appId as string;
}

/**
 * Rules that let any signed-in user read and write every collection. The template (the default
 * app) has rules for `notes-app.notes` and `notes-app.profiles` only and refuses the rest, so tests
 * of other collections create their app with these.
 */
export const openData = { rules: { default: { read: true, write: true, insert: true, delete: true } } };

/** A new app whose collections are open to every signed-in user (see openData), with more overrides. */
export const newOpenApp = (app: FastifyInstance, config: Record<string, unknown> = {}) =>
  newApp(app, deepMerge(structuredClone(openData), config));

/** A mongodb-atlas action as a client calls it (`POST functions/call`), contract-checked. */
export const mongoAction = (
  app: FastifyInstance,
  appId: string,
  token: string,
  name: string,
  argument: Record<string, unknown>,
  /** The client's address (inject's default: 127.0.0.1). */
  remoteAddress?: string,
) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    payload: { name, arguments: [argument], service: "mongodb-atlas" },
    ...(remoteAddress ? { remoteAddress } : {}),
  });

/**
 * For a test file: an app open to every signed-in user (openData), built before its tests and
 * closed after them; one anonymous user's mongodb-atlas actions on it; and a fresh collection of
 * database `db` for each case (`${prefix}-1`, `${prefix}-2`…).
 */
export function openDataActions(prefix: string) {
  let app: FastifyInstance;
  let appId: string;
  let token: string;
  let counter = 0;
  beforeAll(async () => {
    app = await testApp({ logLevel: "error" });
    appId = await newOpenApp(app);
    token = (await anonymousLogin(app, appId)).access_token;
  });
  afterAll(() => app.close());
  return {
    action: (name: string, argument: Record<string, unknown>) => mongoAction(app, appId, token, name, argument),
    collection: () => ({ database: "db", collection: `${prefix}-${++counter}` }),
  };
}

/** One of the app's functions as a client calls it (`POST functions/call`), contract-checked. */
export const callAppFunction = (app: FastifyInstance, appId: string, token: string, name: string, args: unknown[]) =>
  call(app, "callFunction", {
    method: "POST",
    url: `${base}/app/${appId}/functions/call`,
    headers: bearer(token),
    payload: { name, arguments: args },
  });

/** A function's result, its call expected to succeed (the reply's body on failure). */
export async function functionResult(
  app: FastifyInstance,
  appId: string,
  token: string,
  name: string,
  args: unknown[],
) {
  const { response, body } = await callAppFunction(app, appId, token, name, args);
  expect(response.statusCode, JSON.stringify(body)).toBe(200);
  return body;
}

/**
 * An emulator with an app of these functions (name → source) and more config, and an anonymous
 * user's token: what the functions' tests start from. Close `app` after them.
 */
export async function appOfFunctions(sources: Record<string, string>, config: Record<string, unknown> = {}) {
  const app = await testApp({ allowFunctionSource: true });
  const appId = await newApp(app, {
    ...config,
    functions: Object.fromEntries(Object.entries(sources).map(([name, source]) => [name, { source }])),
  });
  const token = (await anonymousLogin(app, appId)).access_token as string;
  return {
    app,
    appId,
    token,
    run: (name: string, ...args: unknown[]) => functionResult(app, appId, token, name, args),
  };
}

/**
 * For a test file of one such app: starts it before the file's tests and closes it after them
 * (vitest's beforeAll/afterAll); answers a function's result as `run` does.
 */
export function functionsRunner(sources: Record<string, string>, config: Record<string, unknown> = {}) {
  let made: Awaited<ReturnType<typeof appOfFunctions>> | undefined;
  beforeAll(async () => {
    made = await appOfFunctions(sources, config);
  });
  afterAll(() => made?.app.close());
  return (name: string, ...args: unknown[]): Promise<any> => made!.run(name, ...args);
}

/** `GET /auth/profile` with an access token, contract-checked. */
export const getProfile = (app: FastifyInstance, token: string) =>
  call(app, "getProfile", { method: "GET", url: `${base}/auth/profile`, headers: bearer(token) });

export async function anonymousLogin(app: FastifyInstance, appId: string, remoteAddress?: string) {
  const { body } = await call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/anon-user/login`,
    payload: {},
    ...(remoteAddress ? { remoteAddress } : {}),
  });
  return body as { access_token: string; refresh_token: string; user_id: string; device_id: string };
}

/**
 * A confirmed e-mail/password registration without a user object yet (its first login, or a link,
 * makes one): seeded pending, then confirmed through the control API. Answers its id.
 */
export async function confirmedRegistration(
  app: FastifyInstance,
  appId: string,
  email: string,
  password = "secret-1",
): Promise<string> {
  const pending = await call(app, "createUser", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/users`,
    payload: { email, password, confirmed: false },
  });
  await call(app, "confirmPendingUser", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/users/${pending.body.id}/confirm`,
  });
  return pending.body.id as string;
}

/** Registers and confirms (through the captured confirmation token) an e-mail/password user, then logs in. */
export async function emailUser(
  app: FastifyInstance,
  appId: string,
  email = "ada@example.com",
  password = "correct horse",
) {
  await call(app, "createUser", {
    method: "POST",
    url: `/_mock/v1/apps/${appId}/users`,
    payload: { email, password },
  });
  const { body } = await call(app, "login", {
    method: "POST",
    url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
    payload: { username: email, password },
  });
  return body as { access_token: string; refresh_token: string; user_id: string; device_id: string };
}

/**
 * Another instance on the same store, for races across instances: on PostgreSQL a second
 * emulator on the same database; in memory the same one (one process is the whole service).
 */
export async function secondInstance(
  app: FastifyInstance,
): Promise<{ other: FastifyInstance; close(): Promise<void> }> {
  if (testStore() === "memory") return { other: app, close: async () => undefined };
  const other = await testApp({
    databaseUrl: app.emulator.options.databaseUrl!,
    signingSecret: app.emulator.signingSecret,
  });
  return { other, close: () => other.close() };
}

/** A client API request calling insertOne through `functions/call` (the races' write). */
export const insertOneCall = (
  appId: string,
  token: string,
  document: Record<string, unknown>,
  collection = "c",
): InjectOptions => ({
  method: "POST",
  url: `${base}/app/${appId}/functions/call`,
  headers: bearer(token),
  payload: {
    name: "insertOne",
    service: "mongodb-atlas",
    arguments: [{ database: "d", collection, document }],
  },
});

/** `count` requests at once, alternately on two instances of one service: their status codes, in order. */
export async function racing(
  [one, two]: [FastifyInstance, FastifyInstance],
  count: number,
  request: (i: number) => InjectOptions,
): Promise<number[]> {
  const replies = await Promise.all(Array.from({ length: count }, (_, i) => (i % 2 ? one : two).inject(request(i))));
  return replies.map((reply) => reply.statusCode);
}

/** How many of each status code. */
export function tally(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

/** The documents stored in an app, all collections together (the control API's listing). */
export async function storedDocuments(app: FastifyInstance, appId: string): Promise<number> {
  const { body } = await call(app, "listCollections", { method: "GET", url: `/_mock/v1/apps/${appId}/data` });
  return body.collections.reduce((n: number, c: { count: number }) => n + c.count, 0);
}

/**
 * A refusal of a counted limit (docs/decisions/0018-fair-shares.md): 429 TooManyRequests with
 * `error`, and a `Retry-After` within the last minute of a window of `windowSeconds`.
 */
export function expectWindowRefusal(
  { response, body }: { response: LightMyRequestResponse; body: any },
  error: string,
  windowSeconds: number,
): void {
  expect(response.statusCode).toBe(429);
  expect(body).toMatchObject({ error, error_code: "TooManyRequests" });
  const wait = Number(response.headers["retry-after"]);
  expect(wait).toBeGreaterThan(windowSeconds - 100);
  expect(wait).toBeLessThanOrEqual(windowSeconds);
}

/**
 * Runs `during` with `meanwhile` run just before each session the app's store starts (what another
 * request does between a login's checks and its session), given the session.
 */
export async function beforeSessionsStart<T>(
  app: FastifyInstance,
  appId: string,
  meanwhile: (session: StoredSession) => Promise<unknown>,
  during: () => Promise<T>,
): Promise<T> {
  const store = (await app.emulator.apps.get(appId))!.store;
  const start = store.startSession.bind(store);
  store.startSession = async (session, lastLoginAt, customData) => {
    await meanwhile(session);
    return start(session, lastLoginAt, customData);
  };
  try {
    return await during();
  } finally {
    store.startSession = start;
  }
}

/**
 * Runs `meanwhile` just before the next call of `object[method]`: what another request does
 * between a request's checks and its write (restored by `vi.restoreAllMocks()`).
 */
export function beforeNext<T extends object>(
  object: T,
  method: keyof T & string,
  meanwhile: () => Promise<unknown>,
): void {
  type Method = (...args: unknown[]) => Promise<unknown>;
  const target = object as unknown as Record<string, Method>;
  const original = target[method]!;
  vi.spyOn(target, method).mockImplementationOnce(async function (this: unknown, ...args: unknown[]) {
    await meanwhile();
    return original.apply(this, args);
  });
}

/**
 * Holds the next two calls of `object[method]` until both have come, then lets them run: two
 * requests past their checks before either acts (restored by `vi.restoreAllMocks()`).
 */
export function bothBefore<T extends object>(object: T, method: keyof T & string): void {
  type Method = (...args: unknown[]) => Promise<unknown>;
  const target = object as unknown as Record<string, Method>;
  const original = target[method]!;
  let arrived = 0;
  let bothIn: () => void = () => undefined;
  const together = new Promise<void>((resolve) => {
    bothIn = resolve;
  });
  vi.spyOn(target, method).mockImplementation(async function (this: unknown, ...args: unknown[]) {
    if (++arrived === 2) bothIn();
    if (arrived <= 2) await together;
    return original.apply(this, args);
  });
}

/** An emulator on the in-memory store, whichever store the file's project tests (functions' source allowed). */
export const memoryApp = () =>
  buildApp({ logLevel: "silent", watchFunctions: false, passwordHashCost: 4, allowFunctionSource: true });

/**
 * For a file: an emulator on the in-memory store, and two on one PostgreSQL database (production's
 * several instances), closed after it.
 */
export function memoryAndTwoInstances(): {
  memory: FastifyInstance;
  postgres: FastifyInstance;
  second: FastifyInstance;
} {
  const emulators = {} as { memory: FastifyInstance; postgres: FastifyInstance; second: FastifyInstance };
  beforeAll(async () => {
    emulators.memory = await memoryApp();
    emulators.postgres = await testApp({ allowFunctionSource: true });
    const { databaseUrl } = emulators.postgres.emulator.options;
    const signingSecret = emulators.postgres.emulator.signingSecret;
    emulators.second = await testApp({ allowFunctionSource: true, databaseUrl, signingSecret });
  });
  // (The second instance first: closing the first drops their database.)
  afterAll(async () => {
    await emulators.second?.close();
    await Promise.all([emulators.memory?.close(), emulators.postgres?.close()]);
  });
  return emulators;
}
