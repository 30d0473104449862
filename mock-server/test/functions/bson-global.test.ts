/**
 * The reference's `BSON` global, its own examples (functions/globals): `Binary.fromHex`,
 * `fromBase64`, a Binary's `toHex`, `toBase64` and `text`; `Int32`, `Long`, `Double`,
 * `Decimal128`, `ObjectId` and `BSONRegExp` made with or without `new`; `MaxKey` and `MinKey` as
 * values, and the reference's query with `{ $lt: BSON.MaxKey }`. The library's values stay instances
 * of what the global names.
 */
import { describe, expect, it } from "vitest";
import { functionsRunner } from "../helpers/app.ts";

const run = functionsRunner(
  {
    binary: `exports = () => {
      const binary = BSON.Binary.fromBase64("VGVzdCBtZXNzYWdlIHBsZWFzZSBpZ25vcmU=");
      const hex = BSON.Binary.fromHex("54657374", 4);
      return [binary.text(), binary.toBase64(), hex.toHex(), hex.sub_type, hex instanceof BSON.Binary, BSON.Binary.fromBase64("aGk=").text()];
    };`,
    numbers: `exports = () => {
      const long = BSON.Long(600206158, 342);
      const parsed = EJSON.parse('{"n":{"$numberLong":"9007199254740993"}}', { relaxed: false }).n;
      return {
        int32: BSON.Int32(42),
        made: new BSON.Int32(7),
        long: long.toString(),
        formula: long.equals(BSON.Long.fromNumber(342 * Math.pow(2, 32) + 600206158)),
        double: BSON.Double(1234.5678),
        // (Each 0 without an argument, as the reference says.)
        zeros: [BSON.Int32(), BSON.Long(), BSON.Double(), new BSON.Double()],
        decimal: BSON.Decimal128.fromString("1.5"),
        ids: [BSON.ObjectId("5e58667d902d38559c802b13").toHexString(), new BSON.ObjectId("5e58667d902d38559c802b13").toHexString()],
        generated: BSON.ObjectId() instanceof BSON.ObjectId,
        instances: [parsed instanceof BSON.Long, long instanceof BSON.Long, BSON.Int32(1) instanceof BSON.Int32],
        // (The reference's example flags "ig"; BSON has no g flag, which the library refuses.)
        regex: [BSON.BSONRegExp("the great", "i").pattern, BSON.BSONRegExp("the great", "im").options],
      };
    };`,
    keys: `exports = () => [EJSON.stringify({ a: BSON.MaxKey }), EJSON.stringify({ a: BSON.MinKey }), BSON.MaxKey._bsontype];`,
    // The reference's own query: MaxKey compares higher than every value, of any type.
    bounds: `exports = async () => {
      const collection = context.services.get("mongodb-atlas").db("bson").collection("dates");
      await collection.deleteMany({});
      await collection.insertMany([{ _id: 1, date: new Date(0) }, { _id: 2, date: "soon" }, { _id: 3, date: BSON.MaxKey }]);
      const below = await collection.find({ date: { $lt: BSON.MaxKey } }, { _id: 1 }).sort({ date: 1 }).toArray();
      const above = await collection.find({ date: { $gt: BSON.MinKey } }, { _id: 1 }).sort({ date: -1 }).toArray();
      return { first: (await collection.findOne({ date: { $lt: BSON.MaxKey } })) !== null, below, above };
    };`,
  },
  { rules: { default: { read: true, write: true, insert: true, delete: true } } },
);

describe("the BSON global", () => {
  it("reads and writes Binary as the reference's examples do", async () => {
    expect(await run("binary")).toEqual([
      "Test message please ignore",
      "VGVzdCBtZXNzYWdlIHBsZWFzZSBpZ25vcmU=",
      "54657374",
      { $numberInt: "4" },
      true,
      "hi",
    ]);
  });

  it("makes numbers, ids and regular expressions with or without new", async () => {
    expect(await run("numbers")).toEqual({
      int32: { $numberInt: "42" },
      made: { $numberInt: "7" },
      long: String(342n * 2n ** 32n + 600206158n),
      formula: true,
      double: { $numberDouble: "1234.5678" },
      zeros: [{ $numberInt: "0" }, { $numberLong: "0" }, { $numberDouble: "0.0" }, { $numberDouble: "0.0" }],
      decimal: { $numberDecimal: "1.5" },
      ids: ["5e58667d902d38559c802b13", "5e58667d902d38559c802b13"],
      generated: true,
      instances: [true, true, true],
      regex: ["the great", "im"],
    });
  });

  it("has MaxKey and MinKey as values", async () => {
    expect(await run("keys")).toEqual(['{"a":{"$maxKey":1}}', '{"a":{"$minKey":1}}', "MaxKey"]);
  });

  it("answers the reference's query with { $lt: BSON.MaxKey }, across types", async () => {
    const id = (n: number) => ({ _id: { $numberInt: String(n) } });
    expect(await run("bounds")).toEqual({ first: true, below: [id(2), id(1)], above: [id(3), id(1), id(2)] });
  });
});
