/**
 * A field path through `__proto__`, `constructor` or `toString` reaches a document's own fields
 * only: an update, an upsert's query or a stage naming `__proto__` once wrote to `Object.prototype`
 * itself (one anonymous user's `$set: {"__proto__.polluted": 1}` broke every later request of every
 * client, the control API's too, until a restart), and a query of `constructor` found what every
 * object inherits. Such a path is refused (as the query engine refuses it in a selector; a request
 * body may hold no `__proto__` key either) and nothing is written; `constructor` and `toString`
 * are fields like others.
 */
import { describe, expect, it } from "vitest";
import { openDataActions } from "../helpers/app.ts";

const { action, collection } = openDataActions("proto");

/** Object.prototype's names, to see that no request added one. */
const prototypeNames = () => Object.getOwnPropertyNames(Object.prototype).sort();

const refusals: [name: string, argument: Record<string, unknown>, path: string][] = [
  ["updateOne", { query: {}, update: { $set: { "__proto__.polluted": "yes" } } }, "__proto__.polluted"],
  ["updateOne", { query: {}, update: { $set: { "a.__proto__.polluted": 1 } } }, "a.__proto__.polluted"],
  ["updateMany", { query: {}, update: { $inc: { "__proto__.n": 1 } } }, "__proto__.n"],
  ["updateOne", { query: {}, update: { $push: { "__proto__.list": 1 } } }, "__proto__.list"],
  ["updateOne", { query: {}, update: { $currentDate: { "__proto__.at": true } } }, "__proto__.at"],
  ["updateOne", { query: {}, update: { $rename: { x: "__proto__.x" } } }, "__proto__.x"],
  ["updateOne", { query: {}, update: { $unset: { "__proto__.toString": "" } } }, "__proto__.toString"],
  ["updateOne", { query: {}, update: { $set: { "list.$[].__proto__.polluted": 1 } } }, "list.$[].__proto__.polluted"],
  ["findOneAndUpdate", { filter: {}, update: { $set: { "__proto__.polluted": 1 } } }, "__proto__.polluted"],
  ["updateOne", { query: { "__proto__.polluted": 1 }, update: { $set: { y: 1 } }, upsert: true }, "__proto__.polluted"],
  [
    "updateOne",
    { query: { z: 1 }, update: { $setOnInsert: { "__proto__.polluted": 1 } }, upsert: true },
    "__proto__.polluted",
  ],
  ["updateOne", { query: {}, update: [{ $set: { "__proto__.polluted": 1 } }] }, "__proto__.polluted"],
  ["aggregate", { pipeline: [{ $addFields: { "a.__proto__.polluted": 1 } }] }, "a.__proto__.polluted"],
  ["aggregate", { pipeline: [{ $project: { "__proto__.polluted": "$x" } }] }, "__proto__.polluted"],
  [
    "aggregate",
    { pipeline: [{ $densify: { field: "__proto__.polluted", range: { step: 1, bounds: "full" } } }] },
    "__proto__.polluted",
  ],
  ["aggregate", { pipeline: [{ $unset: ["a", "__proto__.polluted"] }] }, "__proto__.polluted"],
  [
    "updateOne",
    { query: {}, update: { $set: { "constructor.prototype.polluted": 1 } } },
    "constructor.prototype.polluted",
  ],
];

describe("field paths through an object's prototype", () => {
  it("refuses each path through __proto__ (or constructor.prototype), writing nothing anywhere", async () => {
    const before = prototypeNames();
    const at = collection();
    const stored = { _id: 1, x: 1, a: {}, list: [{}] };
    expect((await action("insertOne", { ...at, document: stored })).response.statusCode).toBe(200);
    for (const [name, argument, path] of refusals) {
      const { response, body } = await action(name, { ...at, ...argument });
      const words = path.includes("__proto__") ? "__proto__" : "constructor.prototype";
      expect([name, response.statusCode, body], JSON.stringify(argument)).toEqual([
        name,
        400,
        expect.objectContaining({
          error: `Accessing ${words} is not allowed in selector: '${path}'.`,
          error_code: "MongoDBError",
        }),
      ]);
      expect(prototypeNames()).toEqual(before);
    }
    const { body } = await action("find", { ...at, query: {} });
    expect(body).toEqual([{ _id: { $numberInt: "1" }, x: { $numberInt: "1" }, a: {}, list: [{}] }]);
  });

  it("finds only a document's own constructor and toString fields, and writes them as any other", async () => {
    const at = collection();
    expect((await action("insertMany", { ...at, documents: [{ _id: 1 }, { _id: 2 }] })).response.statusCode).toBe(200);
    for (const name of ["constructor", "toString", "hasOwnProperty"]) {
      expect((await action("find", { ...at, query: { [name]: { $exists: true } } })).body).toEqual([]);
      expect((await action("count", { ...at, query: { [name]: { $exists: false } } })).body).toEqual({
        $numberLong: "2",
      });
    }
    const set = await action("updateOne", {
      ...at,
      query: { _id: 2 },
      update: { $set: { "constructor.x": 1, "toString.y": 2 } },
    });
    expect(set.body).toEqual({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    expect((await action("find", { ...at, query: { "constructor.x": 1 } })).body).toEqual([
      { _id: { $numberInt: "2" }, constructor: { x: { $numberInt: "1" } }, toString: { y: { $numberInt: "2" } } },
    ]);
    const sorted = await action("aggregate", {
      ...at,
      pipeline: [{ $sort: { constructor: -1 } }, { $project: { _id: 1 } }],
    });
    expect(sorted.body).toEqual([{ _id: { $numberInt: "2" } }, { _id: { $numberInt: "1" } }]);
  });
});
