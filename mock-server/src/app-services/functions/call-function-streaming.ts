import {
  defaultMaxStreamBufferBytes,
  defaultMaxStreamsPerAddress,
  defaultMaxStreamsPerAnonymousUser,
  defaultMaxStreamsPerApp,
  defaultMaxStreamsPerUser,
  mongoServiceOf,
} from "../../config/app-config.ts";
import { controlApiServed } from "../../config/options.ts";
import { changeDocument, invalidateDocument, invalidates } from "../../data/change-events.ts";
import { type ChangeEvent, type Document, fromEJSON, isDocument } from "../../data/documents.ts";
import { laneGroup } from "../../data/evaluation.ts";
import { mongoError, shaperOf } from "../../data/query-jobs.ts";
import { queryLimitsOf } from "../../data/query-limits.ts";
import { rulesOf } from "../../data/rules.ts";
import { strictFormProblem } from "../../data/strict-forms.ts";
import { Turns } from "../../data/turns.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { defaultHeartbeatMs, heartbeatComment, openEventStream, startHeartbeat } from "../../http/event-stream.ts";
import { queuedBytes } from "../../http/unsent-replies.ts";
import { databaseLost, type OpenStream, type StreamCap } from "../../runtime/streams.ts";
import { redactUrl } from "../../state/journal.ts";
import { isAnonymousUser, StoreUnavailableError, userActive } from "../../store/store.ts";
import { requestExpansion } from "../request-expansion.ts";
import { defineRoute } from "../route.ts";
import { encodeChange, shapedChange, streamErrors, type WatchSpec, watchMatcher } from "./change-stream.ts";

/**
 * How long a stream's session and user are trusted before the store is asked again, at the next
 * change (ended sessions are announced and end their streams at once: this is the fallback).
 */
const sessionCheckMs = 1_000;
/** How long an ended stream's last bytes may take to reach a client that does not read, before the connection is cut. */
export const defaultDrainGraceMs = 5_000;

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
    // (Refused as the service's reader refuses it, as at the other entries: data/strict-forms.ts.)
    const problem = strictFormProblem(args);
    if (problem !== null) throw new Error(problem);
    decoded = Array.isArray(args) ? fromEJSON(args[0]) : undefined;
  } catch (error) {
    throw errors.badRequest(`invalid Extended JSON in arguments: ${(error as Error).message}`);
  }
  if (!isDocument(decoded)) throw errors.badRequest("watch expects one argument document");
  const { database, collection, ids, filter } = decoded;
  if (typeof database !== "string" || database === "") throw errors.requiredString("database");
  if (typeof collection !== "string" || collection === "") throw errors.requiredString("collection");
  // (A null for either is none, as Go decodes it: decision 0062.)
  if (ids !== undefined && ids !== null && !Array.isArray(ids)) throw errors.badRequest("'ids' must be an array");
  if (filter !== undefined && filter !== null && !isDocument(filter))
    throw errors.badRequest("'filter' must be a document");
  return { database, collection, ...(ids ? { ids } : {}), ...(filter ? { filter: filter as Document } : {}) };
}

/**
 * A change stream: `watch` of the MongoDB service, as server-sent events. Only changes made after
 * the stream opened are sent. It ends when the client goes away, when its session ends (logout,
 * revocation, its API key disabled or deleted, a password reset, the user disabled or deleted —
 * on any instance — or the session runs out), and when the client stops reading; but for the
 * client's own leaving, an `event: error` says why (docs/decisions/0011-revocation.md). It also
 * ends, as MongoDB closes the cursor, after its collection's `drop` (or a `rename` from or over
 * it) and the `invalidate` that follows, without an error (docs/decisions/0056-collection-events.md).
 */
export default defineRoute("callFunctionStreaming", "stream", async (request, reply) => {
  const { emulator } = request.server;
  const { app, user, session } = request.caller!;
  const call = parseRequest(request.query.baas_request);
  if (call.service !== mongoServiceOf(app.config)) throw errors.serviceNotFound(String(call.service ?? ""));
  if (call.name !== "watch") throw errors.functionNotFound(String(call.name ?? ""));
  const spec = watchSpec(call.arguments);
  const rules = rulesOf(app);
  const principal = {
    kind: "user" as const,
    user,
    request: requestExpansion(request),
    address: addressKey(request.ip),
  };
  await rules.prepare(principal, spec.database, [spec.collection]);
  const readFilter = rules.read(principal, spec.database, spec.collection);
  const shape = rules.readShape(principal, spec.database, spec.collection);
  const shaper = shape ? shaperOf(shape) : null;
  let matches: ReturnType<typeof watchMatcher>;
  try {
    matches = watchMatcher(spec, readFilter ?? {}, queryLimitsOf(app.config), {
      lane: `${app.appId}:${user.id}`,
      group: laneGroup(app.appId, principal.address),
      clock: app.clock,
    });
  } catch (error) {
    // (In the words a find's query gets: the query parser's messages made MongoDB's.)
    mongoError(error);
  }
  // Anonymous users have a lower cap, and one client address a cap whatever its users, so that no
  // user or address can take every stream of the app (docs/decisions/0018-fair-shares.md).
  const anonymous = isAnonymousUser(user);
  const perUser = app.config.maxStreamsPerUser ?? defaultMaxStreamsPerUser;
  const perAnonymousUser = app.config.maxStreamsPerAnonymousUser ?? defaultMaxStreamsPerAnonymousUser;
  const anonymousCap = anonymous && perAnonymousUser < perUser;
  const caps = {
    perUser: anonymousCap ? perAnonymousUser : perUser,
    perApp: app.config.maxStreamsPerApp ?? defaultMaxStreamsPerApp,
    perAddress: app.config.maxStreamsPerAddress ?? defaultMaxStreamsPerAddress,
  };
  const address = addressKey(request.ip);
  const bufferLimit = app.config.maxStreamBufferBytes ?? defaultMaxStreamBufferBytes;
  const refusal = (verdict: "ok" | StreamCap) =>
    verdict === "user"
      ? anonymousCap
        ? errors.tooManyAnonymousStreams(caps.perUser)
        : errors.tooManyUserStreams(caps.perUser)
      : verdict === "app"
        ? errors.tooManyAppStreams(caps.perApp)
        : verdict === "address"
          ? errors.tooManyAddressStreams(caps.perAddress)
          : null;
  const early = refusal(app.streams.admits(user.id, address, caps));
  if (early) throw early;
  // Where instances share the store, their streams count too: a place is taken in the store, and
  // given back whatever ends the stream or stops it from opening.
  const places = emulator.store.streamPlaces;
  let place: string | null = null;
  if (places) {
    const taken = await places.take(app.appId, user.id, address, caps);
    if ("cap" in taken) throw refusal(taken.cap);
    place = taken.id;
  }
  const givePlace = () => {
    if (place !== null) places?.give(place);
    place = null;
  };

  // Subscribed before the reply starts: a store that cannot deliver changes now (its database
  // connection is down) refuses here, and the client gets the documented 503 instead of a stream
  // that silently misses events.
  const pending: ChangeEvent[] = [];
  let deliver: ((change: ChangeEvent) => void) | null = null;
  let unsubscribe: () => void;
  try {
    unsubscribe = await app.data.subscribe((change: ChangeEvent) => {
      if (deliver) deliver(change);
      else pending.push(change);
    });
  } catch (error) {
    givePlace();
    throw error;
  }
  // From here to the registration nothing is awaited, so no other stream can take the last place.
  const late = refusal(app.streams.admits(user.id, address, caps));
  if (late) {
    unsubscribe();
    givePlace();
    throw late;
  }

  const res = openEventStream(reply, "text/event-stream");
  // What this stream leaves unsent counts toward the instance's total (runtime/stream-backlog.ts),
  // until its connection is gone: an ended stream's last bytes wait for a slow client a while.
  const backlog = emulator.streamBacklog.open(res);
  res.once("close", backlog.close);

  let increment = 0;
  let closed = false;
  const started = app.clock.now();
  const close = (lastWords?: string) => {
    if (closed) return;
    closed = true;
    app.streams.delete(stream);
    givePlace();
    unsubscribe();
    stopHeartbeat();
    if (lastWords && res.writable) res.write(lastWords);
    res.end();
    // A client that does not read would hold what is still unsent (and the socket) for good.
    if (!res.writableFinished && !res.destroyed) {
      const cut = setTimeout(
        () => res.destroy(),
        request.server.emulator.options.streamDrainGraceMs ?? defaultDrainGraceMs,
      );
      cut.unref();
      res.once("close", () => clearTimeout(cut));
    }
    // (Kept only where something can read it: not in production without a control token.)
    if (controlApiServed(emulator.options)) {
      app.journal.add({
        id: request.id,
        time: new Date(started).toISOString(),
        method: request.method,
        path: redactUrl(request.originalUrl),
        operationId: "callFunctionStreaming",
        status: 200,
        durationMs: app.clock.now() - started,
        faulted: false,
      });
    }
    emulator.events.emit({ type: "request", appId: app.appId, action: "stream-closed", id: request.id });
  };
  /**
   * Writes unless the client has left more than the limit unread, or the instance's streams would
   * hold too much with this stream among their slowest readers: then the stream ends instead.
   */
  const send = (text: string) => {
    if (closed) return;
    if (res.writableLength > bufferLimit) close(streamErrors.bufferLimit(bufferLimit));
    // (Its length for its bytes: at most a third fewer, and no pass over a long text per stream.)
    else if (backlog.wouldEnd(text.length)) close(streamErrors.instanceBufferLimit(emulator.streamBacklog.limit));
    else {
      res.write(text);
      if (backlog.wrote()) close(streamErrors.instanceBufferLimit(emulator.streamBacklog.limit));
    }
  };
  const stream: OpenStream = {
    userId: user.id,
    address,
    sessionId: session.id,
    apiKeyId: session.apiKeyId,
    expiresAt: session.expiresAt,
    close: (reason, cause = "session") =>
      close(cause === "service" ? streamErrors.unavailable(reason) : streamErrors.invalidSession(reason)),
  };
  // Changes are handled one after another (the session check may ask the store), in the order they came.
  let queue: Promise<void> = Promise.resolve();
  let checkedAt = app.clock.now();
  /** Ends the stream and says so when its session has ended; a store that cannot answer ends it as the service's fault. */
  const endedSession = async () => {
    let found: Awaited<ReturnType<typeof app.store.userSession>>;
    try {
      found = await app.store.userSession(user.id, session.id);
    } catch (error) {
      // Not the session's fault: clients reopen such a stream without signing the user out.
      stream.close(
        error instanceof StoreUnavailableError ? databaseLost : "the stream's session could not be checked",
        "service",
      );
      return true;
    }
    const now = app.clock.now();
    const gone = !userActive(found.user, now)
      ? "the stream's user is gone or disabled"
      : !found.session
        ? "the stream's session has ended"
        : now >= found.session.expiresAt
          ? "the stream's session has expired"
          : null;
    if (gone) stream.close(gone);
    else checkedAt = now;
    return gone !== null;
  };
  const handle = async (change: ChangeEvent) => {
    if (closed) return;
    if (app.clock.now() - checkedAt >= sessionCheckMs && (await endedSession())) return;
    if (closed) return;
    // The collection's drop, or a rename from or over it, ends the stream after its event and an
    // `invalidate` (each sent if the watcher's filter takes it; MongoDB closes the cursor anyway).
    const ending = invalidates(change, spec.database, spec.collection);
    if (readFilter !== null) {
      let event: Document | undefined;
      const build = () => {
        event ??= changeDocument(change, Math.floor(app.clock.now() / 1000), ++increment);
        return event;
      };
      try {
        // Streams take turns with each other and with every other request: a change sent to a
        // hundred streams is a hundred writes, not one long step of the main thread.
        const turns = new Turns();
        if (await matches(change, build)) {
          const text = await encodeChange(
            shaper ? shapedChange(build(), shaper, change.fullDocument ?? change.before) : build(),
          );
          await turns.maybe();
          send(text);
        }
        const invalidate = ending ? invalidateDocument(build()) : undefined;
        if (invalidate && (await matches(change, () => invalidate))) send(await encodeChange(invalidate));
      } catch (error) {
        close(streamErrors.mongo((error as Error).message));
      }
    }
    if (ending) close();
  };
  deliver = (change) => {
    queue = queue.then(() => handle(change));
  };
  // A heartbeat keeps an idle connection open; while bytes are still going out it is not needed,
  // and not written: a client in the middle of an event larger than the limit is reading, not past
  // it. One past the limit whose bytes the system took none of for the idle time of a reply (60 s,
  // nginx's `send_timeout`: http/unsent-replies.ts) has stopped reading: its stream ends.
  const idleMs = emulator.unsentReplies.limits.idleMs;
  let queuedAtBeat = 0;
  let progressAt = Date.now();
  const stopHeartbeat = startHeartbeat(emulator.options.streamHeartbeatMs ?? defaultHeartbeatMs, () => {
    const now = Date.now();
    if (res.writableLength === 0) {
      progressAt = now;
      send(heartbeatComment);
      return;
    }
    const queued = queuedBytes(res);
    if (queued !== queuedAtBeat) progressAt = now;
    queuedAtBeat = queued;
    if (now - progressAt >= idleMs && res.writableLength > bufferLimit) close(streamErrors.bufferLimit(bufferLimit));
  });
  app.streams.add(stream);
  // An open stream is not a request in flight: it counts toward the stream caps instead.
  request.leaveInFlight?.();
  emulator.events.emit({ type: "request", appId: app.appId, action: "stream-opened", id: request.id });
  // The response's close (the client went away, or the stream ended): the request's own close fires
  // as soon as its (drained, usually empty) body has been read, so it says nothing about the client.
  res.once("close", () => close());
  // A client that left while the stream was being set up will send no close event any more.
  if (res.destroyed) close();
  // The session was read before the stream was registered: one that ended meanwhile was announced
  // to no stream, so it is read once more now, before any change is sent.
  queue = queue.then(async () => {
    if (!closed) await endedSession();
  });
  for (const change of pending.splice(0)) deliver(change);
  return reply;
});
