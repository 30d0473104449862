/**
 * A write that reads what it changes first (an update, a replacement, a delete) on PostgreSQL:
 * two round trips — its read, which BEGIN goes out with, then its changes, their announcement
 * (sent only while some instance watches the app) and COMMIT, written together. A statement of
 * the second that fails (a quota past its limit) rolls the write back, its error is the answer,
 * and nothing is announced. A message captured (an EmailJS send) is one statement.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ChangeEvent } from "../../src/data/documents.ts";
import { mailSeq } from "../../src/store/mail-messages.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { MailMessage } from "../../src/store/store.ts";
import { anonymousLogin, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";
import { mailOf, newAccount, sendEmail } from "../helpers/emailjs.ts";
import { emulatorDatabase, statementsOf, type TestDatabase, tripsBesideAuthentication } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

let database: TestDatabase;
let app: FastifyInstance;
let other: PostgresStore;

beforeAll(async () => {
  database = await emulatorDatabase("write-statements");
  app = await testApp({ databaseUrl: database.url, signingSecret: "a-test-signing-secret-of-32-chars" });
  other = await PostgresStore.open({ url: database.url });
});

afterAll(async () => {
  await app?.close();
  await other?.close();
  await database?.drop();
});

async function user(config: Record<string, unknown> = {}) {
  const appId = await newOpenApp(app, config);
  const { access_token } = await anonymousLogin(app, appId);
  const act = (name: string, argument: Record<string, unknown>) =>
    mongoAction(app, appId, access_token, name, { database: "d", collection: "c", ...argument });
  /** The app's changes as another instance hears them. */
  const heard = async () => {
    const events: ChangeEvent[] = [];
    const stop = await other.apps.scope(appId).data.subscribe((event) => events.push(event));
    return { events, stop };
  };
  return { act, heard };
}

const idsOf = (events: ChangeEvent[]) =>
  events.map((event) => `${event.operationType} ${(event as { documentKey?: { _id: unknown } }).documentKey?._id}`);

it("updates, replaces or deletes a document in two round trips, announced when the app is watched", async () => {
  const { act, heard } = await user();
  for (const _id of ["a", "b", "c", "d", "e", "f"])
    expect((await act("insertOne", { document: { _id, n: 1 } })).response.statusCode).toBe(200);
  const twoTrips = async (name: string, argument: Record<string, unknown>) => {
    const found = await statementsOf(async () => expect((await act(name, argument)).response.statusCode).toBe(200), {
      own: true,
    });
    expect(tripsBesideAuthentication(found), name).toBe(2);
  };

  await twoTrips("updateOne", { query: { _id: "a" }, update: { $set: { n: 2 } } });
  await twoTrips("deleteOne", { query: { _id: "b" } });
  const { events, stop } = await heard();
  try {
    await twoTrips("updateOne", { query: { _id: "c" }, update: { $set: { n: 2 } } });
    await twoTrips("findOneAndReplace", { filter: { _id: "d" }, update: { n: 3 } });
    await twoTrips("deleteOne", { query: { _id: "e" } });
    await until(() => events.length === 3, "the three changes' events");
    expect(idsOf(events)).toEqual(["update c", "replace d", "delete e"]);
  } finally {
    stop();
  }
  const found = await act("find", { query: {}, sort: { _id: 1 } });
  expect(found.body).toEqual([
    { _id: "a", n: { $numberInt: "2" } },
    { _id: "c", n: { $numberInt: "2" } },
    { _id: "d", n: { $numberInt: "3" } },
    { _id: "f", n: { $numberInt: "1" } },
  ]);
});

it("rolls a write back and answers its error when a statement sent with its commit fails", async () => {
  const { act, heard } = await user({ limits: { documentBytes: 400, anonymousDocumentBytes: 400 } });
  expect((await act("insertOne", { document: { _id: "a", text: "x".repeat(150) } })).response.statusCode).toBe(200);
  const { events, stop } = await heard();
  try {
    const grow = await act("updateOne", { query: { _id: "a" }, update: { $set: { text: "x".repeat(500) } } });
    expect(grow.body).toMatchObject({
      error: "maximum size of documents (400 bytes) reached",
      error_code: "MongoDBError",
    });
    // The connection is whole again: the next write is made and heard, and the refused one never was.
    expect((await act("updateOne", { query: { _id: "a" }, update: { $set: { text: "y" } } })).body).toEqual({
      matchedCount: { $numberInt: "1" },
      modifiedCount: { $numberInt: "1" },
    });
    await until(() => events.length === 1, "the second update's event");
    expect(idsOf(events)).toEqual(["update a"]);
    expect((await act("findOne", { query: { _id: "a" } })).body).toEqual({ _id: "a", text: "y" });
  } finally {
    stop();
  }
});

it("captures a message in one statement that numbers, stores and announces it", async () => {
  const { publicKey } = await newAccount(app);
  const heard: MailMessage[] = [];
  const stop = other.mail.onAdd((message) => heard.push(message));
  try {
    const send = () =>
      sendEmail(app, {
        user_id: publicKey,
        service_id: "local_service",
        template_id: "local_template",
        template_params: { to_email: "ann@example.com", subject: "Hello", message: "Hi Ann" },
      });
    expect((await send()).body).toBe("OK");
    const { roundTrips } = await statementsOf(async () => expect((await send()).body).toBe("OK"), { own: true });
    expect(roundTrips).toBe(1);
    // Numbered in order, and the number written into the message another instance reads.
    const [first, second] = await mailOf(app, publicKey);
    expect(mailSeq(String(second!.id))).toBe(mailSeq(String(first!.id)) + 1);
    await until(() => heard.length === 2, "the messages heard on another instance");
    expect(heard.map((message) => message.id)).toEqual([first!.id, second!.id]);
  } finally {
    stop();
  }
});
