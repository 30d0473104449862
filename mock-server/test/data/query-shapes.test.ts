/**
 * Each hostile request shape (test/helpers/hostile-shapes.ts) gets its own documented refusal from
 * the MongoDB actions — the memory ceiling, the reply or document cap, or the time limit — through
 * the whole path (the main thread's slice, then a query worker), with a deadline long enough that
 * the answer does not depend on how busy the machine is. The time-limited shapes get a short one:
 * some of them never reach a cooperative check (a hash map's collisions), and the worker's hard
 * timeout must end them. Server-level behaviour (others served meanwhile) is hostile-evaluation.test.ts.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { AppConfig } from "../../src/config/app-config.ts";
import { MongoService } from "../../src/data/mongo-actions.ts";
import { queryWorkers } from "../../src/data/query-workers.ts";
import { MemoryDocuments } from "../../src/store/memory/documents.ts";
import { refusals, shapes } from "../helpers/hostile-shapes.ts";

beforeAll(async () => {
  await queryWorkers.warm();
});

async function service(timeoutMs: number) {
  const data = new MemoryDocuments();
  const config = { queryTimeoutMs: timeoutMs } as AppConfig;
  const mongo = new MongoService({ appId: `shapes-${timeoutMs}`, config, data }, { kind: "system" });
  await mongo.run("insertMany", {
    database: "db",
    collection: "c",
    documents: [
      { _id: 1, title: "a", n: 1 },
      { _id: 2, title: "b", n: 2 },
    ],
  });
  return { mongo, data };
}

describe("hostile request shapes, one by one", () => {
  for (const { label, action, argument, refusal } of shapes) {
    it(`${label}: ${refusal === "time" ? "the time limit" : `its ${refusal} limit`}`, async () => {
      const { mongo, data } = await service(refusal === "time" ? 300 : 60_000);
      const started = performance.now();
      await expect(mongo.runText(action, { database: "db", collection: "c", ...argument })).rejects.toMatchObject({
        statusCode: 400,
        errorCode: "MongoDBError",
        message: expect.stringMatching(refusals[refusal]),
      });
      if (refusal === "time") expect(performance.now() - started).toBeLessThan(10_000);
      // A refused write wrote nothing.
      const stored = await data.read("db", "c", {});
      expect(stored.map((d) => Object.keys(d))).toEqual([
        ["_id", "title", "n"],
        ["_id", "title", "n"],
      ]);
    });
  }
});
