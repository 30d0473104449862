/**
 * `$out` and `$merge` in a system user's aggregation (docs/decisions/0054-out-and-merge.md), on
 * both stores: what each writes into its target, the events the target's streams see, MongoDB's
 * refusals of their specifications and of results they cannot write, and what is kept when a
 * result is refused.
 */
import { Long } from "bson";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ChangeEvent, Document } from "../../src/data/documents.ts";
import { MongoService } from "../../src/data/mongo-actions.ts";
import { mainThreadSlice } from "../../src/data/query-limits.ts";
import { newOpenApp, testApp, testStore } from "../helpers/app.ts";

let app: FastifyInstance;
let system: MongoService;
let events: ChangeEvent[] = [];
let unsubscribe: () => void;

beforeAll(async () => {
  app = await testApp();
  const appId = await newOpenApp(app);
  const runtime = (await app.emulator.apps.get(appId))!;
  system = new MongoService(runtime, { kind: "system" });
  unsubscribe = await runtime.data.subscribe((event) => events.push(event));
});
afterAll(async () => {
  unsubscribe();
  await app.close();
});

const run = (action: "aggregate" | "insertMany" | "deleteMany", args: Document, collection = "source") =>
  system.run(action, { database: "d", collection, ...args });
const aggregate = (pipeline: Document[]) => run("aggregate", { pipeline });
const contents = async (collection: string, database = "d") =>
  (await system.run("find", { database, collection, query: {}, sort: { _id: 1 } })) as Document[];
/** Each pipeline's refusal, by name. */
const refusalsOf = async (pipelines: Record<string, Document[]>) =>
  Object.fromEntries(
    await Promise.all(Object.entries(pipelines).map(async ([name, pipeline]) => [name, await refusal(pipeline)])),
  );
const refusal = (pipeline: Document[]) =>
  aggregate(pipeline).then(
    () => "written",
    (error: Error) => error.message,
  );
let fences = 0;
/**
 * Once every event of the writes so far has come (a store delivers them in commit order, the
 * PostgreSQL store after its notification): a write's own event is waited for.
 */
async function settled(): Promise<void> {
  const fence = ++fences;
  await system.run("insertOne", { database: "d", collection: "fence", document: { _id: fence } });
  await expect.poll(() => events.some((e) => e.collection === "fence" && e.documentKey?._id === fence)).toBe(true);
}
/** The events of the target since the test began (each write's come): operation and key. */
async function targetEvents(collection = "target") {
  await settled();
  return events.filter((e) => e.collection === collection).map((e) => [e.operationType, e.documentKey?._id]);
}

beforeEach(async () => {
  for (const collection of ["source", "target"]) await run("deleteMany", { query: {} }, collection);
  await run("insertMany", {
    documents: [
      { _id: 1, team: "red", points: 3 },
      { _id: 2, team: "blue", points: 5 },
      { _id: 3, team: "red", points: 4 },
    ],
  });
  await settled();
  events = [];
});

const totals = [{ $group: { _id: "$team", total: { $sum: "$points" } } }, { $sort: { _id: 1 } }];

describe("$out", () => {
  it("replaces the target's documents with the results and answers none", async () => {
    await run("insertMany", { documents: [{ _id: "old" }, { _id: "red", total: 0 }] }, "target");
    await settled();
    events = [];
    expect(await aggregate([...totals, { $out: "target" }])).toEqual([]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 7 },
    ]);
    // MongoDB fills a temporary collection and renames it over the target: no document's event,
    // the rename's (the target's streams end at it).
    expect(await targetEvents()).toEqual([]);
    const [renamed, ...more] = events.filter((e) => e.to?.coll === "target");
    expect(more).toEqual([]);
    expect(renamed).toMatchObject({ operationType: "rename", database: "d", to: { db: "d", coll: "target" } });
    expect(renamed!.collection).toMatch(/^tmp\.agg_out\.[0-9a-f-]{36}$/);
    expect(renamed!.documentKey).toBeUndefined();
    // No results: the target is emptied.
    await aggregate([{ $match: { none: true } }, { $out: "target" }]);
    expect(await contents("target")).toEqual([]);
  });

  it("writes another database's collection, and gives results without _id one", async () => {
    await aggregate([{ $project: { _id: 0, team: 1 } }, { $out: { db: "reports", coll: "teams" } }]);
    const written = await contents("teams", "reports");
    expect(written.map((d) => d.team).sort()).toEqual(["blue", "red", "red"]);
    expect(written.every((d) => Object.keys(d)[0] === "_id" && d._id !== undefined)).toBe(true);
  });

  // (On the memory store only: the cap is the action's, and 50,000 inserts take the PostgreSQL store ~15 s here.)
  it.skipIf(testStore() === "postgres")("writes every result, past the 50,000 a reply holds", async () => {
    await run("insertMany", { documents: [{ _id: "many", n: Array.from({ length: 50_001 }, (_, i) => i) }] });
    await aggregate([{ $match: { _id: "many" } }, { $unwind: "$n" }, { $project: { _id: "$n" } }, { $out: "target" }]);
    expect(await system.run("count", { database: "d", collection: "target", query: {} })).toEqual(
      Long.fromNumber(50_001),
    );
    // (Emptied as $out empties: no event of each document for the next test's cleaning to wait on.)
    await aggregate([{ $match: { none: true } }, { $out: "target" }]);
  });

  it("leaves the target as it was when two results share an _id", async () => {
    await run("insertMany", { documents: [{ _id: "kept" }] }, "target");
    // (MongoDB meets it in the collection it fills before that takes the target's place.)
    expect(await refusal([{ $project: { _id: "$team" } }, { $out: "target" }])).toMatch(
      /^Duplicate key error collection: d\.tmp\.agg_out\.[0-9a-f-]{36} index: _id_ dup key: \{ _id: "red" \}$/,
    );
    expect(await contents("target")).toEqual([{ _id: "kept" }]);
  });

  it("is refused where MongoDB refuses it", async () => {
    const refusals = {
      last: [{ $out: "target" }, { $match: {} }],
      // Each stage is parsed before any stage's place is checked.
      laterStage: [{ $out: "target" }, { $limit: -1 }],
      inLookup: [{ $lookup: { from: "target", pipeline: [{ $out: "x" }], as: "j" } }],
      notLastInLookup: [{ $lookup: { from: "target", pipeline: [{ $out: "x" }, { $match: {} }], as: "j" } }],
      inUnionWith: [{ $unionWith: { coll: "target", pipeline: [{ $out: "x" }] } }],
      inFacet: [{ $facet: { a: [{ $out: "x" }] } }],
      type: [{ $out: 1 }],
      missing: [{ $out: { db: "d" } }],
      unknown: [{ $out: { db: "d", coll: "x", into: "y" } }],
      name: [{ $out: "a$b" }],
      special: [{ $out: "system.views" }],
      internal: [{ $out: { db: "admin", coll: "x" } }],
    };
    expect(await refusalsOf(refusals)).toEqual({
      last: "$out can only be the final stage in the pipeline",
      laterStage: "invalid argument to $limit stage: Expected a non-negative number in: $limit: -1",
      inLookup: "$out is not allowed within a $lookup's sub-pipeline",
      notLastInLookup: "$out can only be the final stage in the pipeline",
      inUnionWith: "$out is not allowed within a $unionWith's sub-pipeline",
      inFacet: "$out is not allowed to be used within a $facet stage",
      type: "$out only supports a string or object argument, but found int",
      missing: "BSON field '$out.coll' is missing but a required field",
      unknown: "BSON field '$out.into' is an unknown field.",
      name: "Invalid $out target namespace, d.a$b",
      special: "Can't $out to special collection: system.views",
      internal: "Can't $out to internal database: admin",
    });
    expect(await contents("target")).toEqual([]);
  });
});

describe("$merge", () => {
  it("merges the results' fields into the documents they match and inserts the rest", async () => {
    await run("insertMany", { documents: [{ _id: "red", total: 0, color: "#f00" }] }, "target");
    await settled();
    events = [];
    expect(await aggregate([...totals, { $merge: "target" }])).toEqual([]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 7, color: "#f00" },
    ]);
    expect(await targetEvents()).toEqual([
      ["insert", "blue"],
      ["update", "red"],
    ]);
    const update = events.find((e) => e.operationType === "update")!;
    expect(update.updateDescription).toMatchObject({ updatedFields: { total: 7 }, removedFields: [] });
  });

  it("replaces, keeps, or refuses the documents the results match", async () => {
    const seed = async () => {
      await run("deleteMany", { query: {} }, "target");
      await run("insertMany", { documents: [{ _id: "red", total: 0, color: "#f00" }] }, "target");
    };
    await seed();
    await aggregate([...totals, { $merge: { into: "target", whenMatched: "replace" } }]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 7 },
    ]);
    await seed();
    await aggregate([...totals, { $merge: { into: "target", whenMatched: "keepExisting" } }]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 0, color: "#f00" },
    ]);
    await seed();
    // The other results are written (MongoDB's batch is unordered), then the refusal answers.
    expect(
      await refusal([totals[0]!, { $sort: { _id: -1 } }, { $merge: { into: "target", whenMatched: "fail" } }]),
    ).toBe(
      "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields :: caused by :: " +
        'Duplicate key error collection: d.target index: _id_ dup key: { _id: "red" }',
    );
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 0, color: "#f00" },
    ]);
  });

  it("discards or refuses results that match nothing", async () => {
    await run("insertMany", { documents: [{ _id: "red", total: 0 }] }, "target");
    await aggregate([...totals, { $merge: { into: "target", whenNotMatched: "discard" } }]);
    expect(await contents("target")).toEqual([{ _id: "red", total: 7 }]);
    // The matched results are written before the refusal (the whole batch is).
    const highest = { $group: { _id: "$team", total: { $max: "$points" } } };
    expect(
      await refusal([highest, { $sort: { _id: 1 } }, { $merge: { into: "target", whenNotMatched: "fail" } }]),
    ).toBe(
      "$merge could not find a matching document in the target collection for at least one document in the source collection",
    );
    expect(await contents("target")).toEqual([{ _id: "red", total: 4 }]);
  });

  it("runs a whenMatched pipeline with $$new and let's variables, and inserts results as they are", async () => {
    await run("insertMany", { documents: [{ _id: "red", total: 10, runs: 1 }] }, "target");
    await aggregate([
      ...totals,
      {
        $merge: {
          into: "target",
          whenMatched: [{ $set: { total: { $add: ["$total", "$$new.total"] }, runs: { $add: ["$runs", 1] } } }],
        },
      },
    ]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 17, runs: 2 },
    ]);
    await aggregate([
      ...totals,
      {
        $merge: {
          into: "target",
          let: { added: "$total", team: "$_id" },
          whenMatched: [{ $set: { total: { $add: ["$total", "$$added"] }, last: "$$team" } }],
        },
      },
    ]);
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 10, last: "blue" },
      { _id: "red", total: 24, runs: 2, last: "red" },
    ]);
  });

  it("decides a result in a worker when its update does not fit the main thread's slice", async () => {
    await run("insertMany", { documents: [{ _id: "red", total: 10 }] }, "target");
    const slice = mainThreadSlice as { ms: number; steps: number };
    const usual = { ...slice };
    // Every slice already over: an evaluation of more than a few steps moves to a worker.
    Object.assign(slice, { ms: -1, steps: 1 });
    const zero = { $reduce: { input: { $range: [0, 50] }, initialValue: 0, in: { $multiply: ["$$value", 1] } } };
    try {
      await aggregate([
        ...totals,
        { $merge: { into: "target", whenMatched: [{ $set: { total: { $add: ["$total", "$$new.total", zero] } } }] } },
      ]);
    } finally {
      Object.assign(slice, { ms: usual.ms, steps: usual.steps });
    }
    expect(await contents("target")).toEqual([
      { _id: "blue", total: 5 },
      { _id: "red", total: 17 },
    ]);
  });

  it("matches on other fields, which every result must hold", async () => {
    await run("insertMany", { documents: [{ _id: 100, team: "red", total: 0 }] }, "target");
    await aggregate([
      { $group: { _id: "$team", total: { $sum: "$points" } } },
      { $project: { _id: 0, team: "$_id", total: 1 } },
      { $merge: { into: "target", on: "team", whenMatched: "replace" } },
    ]);
    const written = await contents("target");
    expect(written.find((d) => d.team === "red")).toEqual({ _id: 100, team: "red", total: 7 });
    expect(written.find((d) => d.team === "blue")).toMatchObject({ team: "blue", total: 5 });
    // One result without its key: none is written.
    const withoutTeam = { $set: { team: { $cond: [{ $eq: ["$_id", 3] }, "$$REMOVE", "$team"] }, total: 0 } };
    expect(await refusal([withoutTeam, { $merge: { into: "target", on: "team" } }])).toBe(
      "$merge write error: 'on' field 'team' cannot be missing, null, undefined or an array",
    );
    expect(await refusal([{ $set: { team: ["red"] } }, { $merge: { into: "target", on: "team" } }])).toBe(
      "$merge write error: 'on' field 'team' is an array",
    );
    expect(await contents("target")).toEqual(written);
    // A result whose _id differs from the document its key matched.
    const immutable =
      "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: ";
    expect(await refusal([{ $match: { _id: 1 } }, { $merge: { into: "target", on: "team" } }])).toBe(
      `${immutable}Performing an update on the path '_id' would modify the immutable field '_id'`,
    );
    expect(
      await refusal([{ $match: { _id: 1 } }, { $merge: { into: "target", on: "team", whenMatched: "replace" } }]),
    ).toBe(
      `${immutable}After applying the update, the (immutable) field '_id' was found to have been altered to _id: 1`,
    );
  });

  it("is refused where MongoDB refuses it", async () => {
    const pipeline = [{ $set: { a: 1 } }];
    const refusals = {
      last: [{ $merge: "target" }, { $match: {} }],
      combination: [{ $merge: { into: "target", whenMatched: "fail", whenNotMatched: "discard" } }],
      letWithoutPipeline: [{ $merge: { into: "target", let: { a: 1 }, whenMatched: "replace" } }],
      unknown: [{ $merge: { into: "target", upsert: true } }],
      mode: [{ $merge: { into: "target", whenMatched: "update" } }],
      duplicateOn: [{ $merge: { into: "target", on: ["a", "a"] } }],
      emptyOn: [{ $merge: { into: "target", on: [] } }],
      onType: [{ $merge: { into: "target", on: 1 } }],
      newOtherwise: [{ $merge: { into: "target", let: { new: "$a" }, whenMatched: pipeline } }],
      variableName: [{ $merge: { into: "target", let: { Team: "$team" }, whenMatched: pipeline } }],
      emptyInto: [{ $merge: "" }],
      intoType: [{ $merge: { into: 1 } }],
      internal: [{ $merge: { into: { db: "local", coll: "x" } } }],
      special: [{ $merge: { into: "system.js" } }],
      type: [{ $merge: 1 }],
      inLookup: [{ $lookup: { from: "target", pipeline: [{ $merge: "x" }], as: "j" } }],
    };
    expect(await refusalsOf(refusals)).toEqual({
      last: "$merge can only be the final stage in the pipeline",
      combination: "Combination of $merge modes 'whenMatched: fail' and 'whenNotMatched: discard' is not supported",
      letWithoutPipeline: "Cannot use 'let' variables with 'whenMatched: replace' mode",
      unknown: "BSON field '$merge.upsert' is an unknown field.",
      mode: "Enumeration value 'update' for field 'whenMatched' is not a valid value.",
      duplicateOn: "Found a duplicate field 'a'",
      emptyOn: "If explicitly specifying $merge 'on', must include at least one field",
      onType: "$merge 'on' field  must be either a string or an array of strings, but found int",
      newOtherwise: "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'",
      variableName: "'Team' starts with an invalid character for a user variable name",
      emptyInto: "$merge 'into' field cannot be an empty string",
      intoType: "$merge 'into' field  must be either a string or an object, but found int",
      internal: "Cannot $merge to internal database: local",
      special: "Cannot $merge to special collection: system.js",
      type: "$merge requires a string or object argument, but found int",
      inLookup: "$merge is not allowed within a $lookup's sub-pipeline",
    });
    expect(await contents("target")).toEqual([]);
  });
});
