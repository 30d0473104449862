import { type ChangeEvent, type Document, fromEJSON, isDocument } from "../../data/documents.ts";
import { mongoServiceName } from "../../data/mongo-actions.ts";
import { Rules } from "../../data/rules.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { redactUrl } from "../../state/journal.ts";
import { defineRoute } from "../route.ts";
import { changeDocument, encodeChange, sseError, type WatchSpec, watchMatcher } from "./change-stream.ts";

/** How often an idle stream gets an SSE comment, so proxies and clients keep it open. */
export const keepAliveMs = 15_000;
/** How long a stream trusts that its user still exists before it asks the store again. */
const userCheckMs = 1_000;

const base64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

function parseRequest(raw: string): { name: unknown; service: unknown; arguments: unknown } {
  const compact = raw.replace(/\s/g, "");
  if (compact === "" || !base64.test(compact)) throw errors.badRequest("invalid baas_request: not base64");
  let parsed: unknown;
  try {
    parsed = JSON.parse(
      Buffer.from(compact, compact.includes("-") || compact.includes("_") ? "base64url" : "base64").toString("utf8"),
    );
  } catch {
    throw errors.badRequest("invalid baas_request: not base64-encoded JSON");
  }
  if (!isDocument(parsed)) throw errors.badRequest("invalid baas_request: expected a JSON object");
  return parsed as { name: unknown; service: unknown; arguments: unknown };
}

function watchSpec(args: unknown): WatchSpec {
  let decoded: unknown;
  try {
    decoded = Array.isArray(args) ? fromEJSON(args[0]) : undefined;
  } catch (error) {
    throw errors.badRequest(`invalid Extended JSON in arguments: ${(error as Error).message}`);
  }
  if (!isDocument(decoded)) throw errors.badRequest("watch expects one argument document");
  const { database, collection, ids, filter } = decoded;
  if (typeof database !== "string" || database === "") throw errors.requiredString("database");
  if (typeof collection !== "string" || collection === "") throw errors.requiredString("collection");
  if (ids !== undefined && !Array.isArray(ids)) throw errors.badRequest("'ids' must be an array");
  if (filter !== undefined && !isDocument(filter)) throw errors.badRequest("'filter' must be a document");
  return { database, collection, ...(ids ? { ids } : {}), ...(filter ? { filter: filter as Document } : {}) };
}

/**
 * A change stream: `watch` of the MongoDB service, as server-sent events. Only changes made after
 * the stream opened are sent; the stream ends when the client goes away.
 */
export default defineRoute("callFunctionStreaming", "stream", async (request, reply) => {
  const { emulator } = request.server;
  const { app, user } = request.caller!;
  const call = parseRequest(request.query.baas_request);
  if (call.service !== mongoServiceName) throw errors.serviceNotFound(String(call.service ?? ""));
  if (call.name !== "watch") throw errors.functionNotFound(String(call.name ?? ""));
  const spec = watchSpec(call.arguments);
  const readFilter = new Rules(app.config).read({ kind: "user", user }, spec.database, spec.collection);
  let matches: ReturnType<typeof watchMatcher>;
  try {
    matches = watchMatcher(spec, readFilter ?? {});
  } catch (error) {
    throw errors.mongo((error as Error).message);
  }

  // Subscribed before the reply starts: a store that cannot deliver changes now (its database
  // connection is down) refuses here, and the client gets the documented 503 instead of a stream
  // that silently misses events.
  const early: ChangeEvent[] = [];
  let deliver: ((change: ChangeEvent) => void) | null = null;
  const unsubscribe = await app.data.subscribe((change: ChangeEvent) => {
    if (deliver) deliver(change);
    else early.push(change);
  });

  reply.hijack();
  // Read (and drop) any body a client sent with its GET: while it sits unread the socket is not
  // read either, so a client's disconnect is never seen and the stream would stay open for good.
  request.raw.resume();
  const res = reply.raw;
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value : String(value);
  }
  res.writeHead(200, {
    ...headers,
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  res.flushHeaders();

  let increment = 0;
  let closed = false;
  const started = app.clock.now();
  const close = (lastWords?: string) => {
    if (closed) return;
    closed = true;
    app.streams.delete(closeForApp);
    unsubscribe();
    clearInterval(keepAlive);
    app.watchers--;
    if (lastWords && res.writable) res.write(lastWords);
    res.end();
    app.journal.add({
      id: request.id,
      time: new Date(started).toISOString(),
      method: request.method,
      path: redactUrl(request.url),
      operationId: "callFunctionStreaming",
      status: 200,
      durationMs: app.clock.now() - started,
      faulted: false,
    });
    emulator.events.emit({ type: "request", appId: app.appId, action: "stream-closed", id: request.id });
  };
  // Changes are handled one after another (the user check may ask the store), in the order they came.
  let queue: Promise<void> = Promise.resolve();
  let userSeenAt = app.clock.now();
  const userStillThere = async () => {
    const now = app.clock.now();
    if (now - userSeenAt < userCheckMs) return true;
    const found = await app.users.get(user.id).catch(() => undefined);
    if (found) userSeenAt = now;
    return found !== undefined;
  };
  const handle = async (change: ChangeEvent) => {
    if (closed) return;
    if (!(await userStillThere())) {
      close(sseError("InvalidSession", "invalid session: the stream's user is gone"));
      return;
    }
    if (closed || readFilter === null) return;
    let event: Document | undefined;
    const build = () => {
      event ??= changeDocument(change, Math.floor(app.clock.now() / 1000), ++increment);
      return event;
    };
    try {
      if (matches(change, build)) res.write(encodeChange(build()));
    } catch (error) {
      close(sseError("MongoDBError", (error as Error).message));
    }
  };
  deliver = (change) => {
    queue = queue.then(() => handle(change));
  };
  for (const change of early.splice(0)) deliver(change);
  const closeForApp = (reason: string) => close(sseError("InvalidSession", `invalid session: ${reason}`));
  app.streams.set(closeForApp, user.id);
  const keepAlive = setInterval(() => res.write(":\n\n"), keepAliveMs);
  keepAlive.unref();
  app.watchers++;
  emulator.events.emit({ type: "request", appId: app.appId, action: "stream-opened", id: request.id });
  // The response's close (the client went away, or the stream ended): the request's own close fires
  // as soon as its (drained, usually empty) body has been read, so it says nothing about the client.
  res.once("close", () => close());
  return reply;
});
