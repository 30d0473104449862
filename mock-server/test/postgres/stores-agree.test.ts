/**
 * The two stores answer alike: generated sequences of data actions — inserts of documents of
 * nested documents, arrays and every kind of number (an `_id` held already too), finds (projected
 * too), counts, updates (upserts too), deletes and aggregations whose queries use equalities,
 * comparisons, `$in`, `$exists`, `$type`, `$size`, `$all`, `$elemMatch`, dotted paths, `$or` and
 * `$and` — sent to an emulator on each store (on PostgreSQL, two instances on one database taking
 * them in turn) get the same statuses and the same bodies, text for text; and change streams opened
 * on each see the same events for generated writes. What one store narrows in SQL or by its indexes and the other matches
 * over the whole collection, or writes from the text it kept where the other writes its values
 * again, shows here as a difference.
 */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryAndTwoInstances, memoryApp, testApp } from "../helpers/app.ts";
import { action, document, masked, numbered, ruleFilter, signedIn, write } from "../helpers/data-actions.ts";
import { listening } from "../helpers/listen.ts";
import { openWatch } from "../helpers/watch.ts";

describe("the in-memory and the PostgreSQL store", () => {
  // PostgreSQL as production runs it: two instances on one database, taking the actions in turn.
  const emulators = memoryAndTwoInstances();
  let sides: Awaited<ReturnType<typeof signedIn>>[];
  beforeAll(async () => {
    const { memory, postgres, second } = emulators;
    sides = [await signedIn(memory), await signedIn(postgres, {}, second)];
  });
  let run = 0;

  it("answer every generated sequence of actions alike", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(document, { minLength: 3, maxLength: 8 }),
        fc.array(action, { minLength: 1, maxLength: 8 }),
        async (documents, actions) => {
          const collection = `c${++run}`;
          for (const [name, argument] of numbered(documents, actions)) {
            const [fromMemory, fromPostgres] = await Promise.all(
              sides.map(({ send }) => send(collection, name, argument)),
            );
            expect(fromPostgres, `${name} ${JSON.stringify(argument)}`).toEqual(fromMemory);
          }
        },
      ),
      { seed: 20261129, numRuns: 80 },
    );
  }, 120_000);

  it("answer alike under a read rule of any generated filter (what the stores narrow by with it)", async () => {
    const clientActions = action.filter(([name]) => name !== "system aggregate");
    await fc.assert(
      fc.asyncProperty(
        ruleFilter,
        fc.array(document, { minLength: 3, maxLength: 8 }),
        fc.array(clientActions, { minLength: 1, maxLength: 6 }),
        async (rule, documents, actions) => {
          const config = { rules: { "d.c": { read: rule, write: true, insert: true, delete: true } } };
          const { memory, postgres, second } = emulators;
          const ruled = [await signedIn(memory, config), await signedIn(postgres, config, second)];
          for (const [name, argument] of numbered(documents, actions)) {
            const [fromMemory, fromPostgres] = await Promise.all(ruled.map(({ send }) => send("c", name, argument)));
            expect(fromPostgres, `${name} ${JSON.stringify(argument)} under ${JSON.stringify(rule)}`).toEqual(
              fromMemory,
            );
          }
        },
      ),
      { seed: 20261129, numRuns: 40 },
    );
  }, 120_000);
});

describe("change streams on the in-memory and the PostgreSQL store", () => {
  const emulators: { app: FastifyInstance; url: string }[] = [];
  let sides: (Awaited<ReturnType<typeof signedIn>> & { url: string })[];
  // The PostgreSQL stream on one instance, every other write through a second one on its database:
  // those writes' events come through the database's notifications.
  let second: FastifyInstance;
  beforeAll(async () => {
    const memory = await memoryApp();
    await memory.listen({ host: "127.0.0.1", port: 0 });
    const address = memory.server.address() as { port: number };
    const postgres = await listening({ allowFunctionSource: true });
    const { databaseUrl } = postgres.app.emulator.options;
    second = await testApp({
      allowFunctionSource: true,
      databaseUrl,
      signingSecret: postgres.app.emulator.signingSecret,
    });
    emulators.push({ app: memory, url: `http://127.0.0.1:${address.port}` }, postgres);
    sides = [
      { ...(await signedIn(memory)), url: emulators[0]!.url },
      { ...(await signedIn(postgres.app, {}, second)), url: postgres.url },
    ];
  });
  afterAll(async () => {
    await second?.close();
    await Promise.all(emulators.map(({ app }) => app.close()));
  });
  let run = 0;

  /** An event as both stores must write it (the resume token and the times are each change's own). */
  const comparable = (block: string | null) =>
    masked(
      (block ?? "end")
        .replace(/"_id":\{"_data":"[0-9A-Fa-f]+"\}/, '"_id":"token"')
        .replace(/"clusterTime":\{"\$timestamp":\{"t":\d+,"i":\d+\}\}/, '"clusterTime":"time"')
        .replace(/"wallTime":\{"\$date":\{"\$numberLong":"\d+"\}\}/, '"wallTime":"time"'),
    );

  it("stream the same events for every generated sequence of writes", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(document, { minLength: 2, maxLength: 5 }),
        fc.array(write, { minLength: 1, maxLength: 5 }),
        async (documents, writes) => {
          const collection = `c${++run}`;
          const opened = await Promise.all(
            sides.map(async ({ url, appId, token, send }) => ({
              stream: await openWatch(url, appId, token, { database: "d", collection }),
              send: (name: string, argument: Record<string, unknown>) => send(collection, name, argument),
            })),
          );
          try {
            let markers = 0;
            for (const [name, argument] of numbered(documents, writes)) {
              const [onMemory, onPostgres] = await Promise.all(opened.map(({ send }) => send(name, argument)));
              const what = `${name} ${JSON.stringify(argument)}`;
              expect(onPostgres!.status, what).toBe(onMemory!.status);
              // A marker written after it: each stream's events before the marker's are the write's.
              const marker = `marker-${++markers}`;
              const [fromMemory, fromPostgres] = await Promise.all(
                opened.map(async ({ stream, send }) => {
                  await send("insertOne", { document: { _id: marker } });
                  const events: string[] = [];
                  for (;;) {
                    const block = comparable(await stream.next());
                    if (block.includes(`"documentKey":{"_id":"${marker}"}`) || block === "end") return events;
                    events.push(block);
                  }
                }),
              );
              expect(fromPostgres, what).toEqual(fromMemory);
            }
          } finally {
            for (const { stream } of opened) stream.close();
          }
        },
      ),
      { seed: 20261129, numRuns: 25 },
    );
  }, 120_000);
});
