/**
 * App Services collection schemas (data/schemas.ts): the BSON types of the store's values, the
 * JSON Schema keywords the service's schemas use, null for optional fields, and `validate`
 * expressions over the document before and after the write; errors worded as the service's.
 */
import { Binary, Decimal128, Long, ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import { type Schema, type SchemaCheck, schemaErrors, typesOf, UnsupportedSchema } from "../../src/data/schemas.ts";
import { type Expansions, ExpressionError } from "../../src/functions/can-evaluate.ts";

const expansions: Expansions = {
  user: () => ({ id: "u1", custom_data: { role: "editor" } }),
  args: () => {
    throw new ExpressionError("%%args is not available to data access rules");
  },
  values: { maxPrice: 100 },
  environment: {},
  request: () => ({}),
};
const check: SchemaCheck = { nullable: false, expansions };
const errorsOf = (
  doc: Record<string, unknown>,
  schema: Schema,
  options: Partial<SchemaCheck> = {},
  before?: Record<string, unknown>,
) => schemaErrors(doc, schema, { ...check, ...options }, before);

// The reference's example (schemas.txt): a car.
const car: Schema = {
  title: "car",
  required: ["_id", "year", "make", "model", "miles"],
  properties: {
    _id: { bsonType: "objectId" },
    year: { bsonType: "string" },
    make: { bsonType: "string" },
    model: { bsonType: "string" },
    miles: { bsonType: "number" },
  },
};

describe("a collection schema", () => {
  it("passes the reference's cars and names what is wrong with others, as the service words it", () => {
    const civic = { _id: new ObjectId(), year: "2017", make: "Honda", model: "Civic", miles: 117424 };
    expect(errorsOf(civic, car)).toEqual([]);
    expect(errorsOf({ ...civic, miles: 1.5 }, car)).toEqual([]);
    expect(errorsOf({ _id: civic._id, year: 2017, make: "Honda", model: "Civic" }, car)).toEqual([
      "(root): miles is required",
      "year: Invalid type. Expected: type: undefined, bsonType: string, given: [integer int long double number mixed]",
    ]);
  });

  it("knows each value's BSON types: an integral number may have been an int, a long or a double", () => {
    expect(typesOf(3)).toContain("int");
    expect(typesOf(3)).toContain("double");
    expect(typesOf(2.5)).toEqual(["number", "double", "mixed"]);
    expect(typesOf(Long.fromString("9007199254740993"))).toEqual(["integer", "long", "number", "mixed"]);
    expect(typesOf(Decimal128.fromString("1.1"))).toContain("decimal");
    expect(typesOf(new Binary(Buffer.alloc(16), 4))).toContain("uuid");
    expect(typesOf(new Date())).toEqual(["date", "mixed"]);
    expect(typesOf(null)).toEqual(["null"]);
    expect(errorsOf({ n: 2.5 }, { properties: { n: { bsonType: "int" } } })).toHaveLength(1);
    expect(errorsOf({ n: true }, { properties: { n: { bsonType: "bool" } } })).toEqual([]);
    expect(errorsOf({ n: true }, { properties: { n: { type: "boolean" } } })).toEqual([]);
    expect(errorsOf({ n: "x" }, { properties: { n: { bsonType: ["int", "string"] } } })).toEqual([]);
    expect(errorsOf({ n: [1, "a", null] }, { properties: { n: { bsonType: "mixed" } } })).toEqual([]);
  });

  it("takes null for an optional field only when the app validates null types so, never for a required one", () => {
    const schema = { required: ["name"], properties: { name: { bsonType: "string" }, nick: { bsonType: "string" } } };
    expect(errorsOf({ name: "a", nick: null }, schema)).toEqual([
      "nick: Invalid type. Expected: type: undefined, bsonType: string, given: [null]",
    ]);
    expect(errorsOf({ name: "a", nick: null }, schema, { nullable: true })).toEqual([]);
    expect(errorsOf({ name: null }, schema, { nullable: true })).toEqual([
      "name: Invalid type. Expected: type: undefined, bsonType: string, given: [null]",
    ]);
  });

  it("checks numbers, strings, arrays, objects and combinations", () => {
    const schema = {
      properties: {
        price: { bsonType: "number", minimum: 0, maximum: 10, exclusiveMaximum: true, multipleOf: 0.5 },
        code: { bsonType: "string", minLength: 2, maxLength: 3, pattern: "^[A-Z]+$" },
        tags: { bsonType: "array", items: { bsonType: "string" }, minItems: 1, maxItems: 2, uniqueItems: true },
        color: { enum: ["red", "blue"] },
        address: {
          bsonType: "object",
          required: ["city"],
          additionalProperties: false,
          properties: { city: { bsonType: "string" } },
        },
        scores: { bsonType: "object", additionalProperties: { bsonType: "int" } },
        either: { anyOf: [{ bsonType: "string" }, { bsonType: "int" }] },
      },
      dependencies: { card: ["billing"] },
    };
    expect(
      errorsOf(
        {
          price: 0,
          code: "AB",
          tags: ["a"],
          color: "red",
          address: { city: "Oslo" },
          scores: { a: 1 },
          either: 3,
          card: 1,
          billing: 2,
        },
        schema,
      ),
    ).toEqual([]);
    expect(
      errorsOf(
        {
          price: 10,
          code: "abcd",
          tags: ["a", "a", "b"],
          color: "green",
          address: { town: "Oslo" },
          scores: { a: "x" },
          either: true,
          card: 1,
        },
        schema,
      ),
    ).toEqual([
      "price: Must be less than 10",
      "code: String length must be less than or equal to 3",
      "code: Does not match pattern '^[A-Z]+$'",
      "tags: Array must have at most 2 items",
      "tags: array items[0,1] must be unique",
      'color: color must be one of the following: "red", "blue"',
      "address: city is required",
      "address: Additional property town is not allowed",
      "scores.a: Invalid type. Expected: type: undefined, bsonType: int, given: [string mixed]",
      "either: Must validate at least one schema (anyOf)",
      "(root): Has a dependency on billing",
    ]);
    expect(errorsOf({ price: -1 }, schema)).toEqual(["price: Must be greater than or equal to 0"]);
    expect(errorsOf({ price: 0.7 }, schema)).toEqual(["price: Must be a multiple of 0.5"]);
  });

  it("evaluates validate expressions over the value, the documents before and after, and the caller", () => {
    // The reference's example (enforce-a-schema): an owner, once set, never changes.
    const owned = {
      properties: {
        owner_id: {
          bsonType: "string",
          validate: {
            "%or": [{ "%%prevRoot.owner_id": { "%exists": false } }, { "%%prevRoot.owner_id": "%%root.owner_id" }],
          },
        },
      },
    };
    expect(errorsOf({ owner_id: "a" }, owned)).toEqual([]);
    expect(errorsOf({ owner_id: "a", n: 2 }, owned, {}, { owner_id: "a", n: 1 })).toEqual([]);
    expect(errorsOf({ owner_id: "b" }, owned, {}, { owner_id: "a" })).toEqual([
      "owner_id: does not satisfy its validate expression",
    ]);
    // %%this, %%prev and the caller's expansions.
    const priced = {
      properties: { price: { validate: { "%%this": { "%lte": "%%values.maxPrice" }, "%%prev": { "%ne": 0 } } } },
    };
    expect(errorsOf({ price: 50 }, priced, {}, { price: 10 })).toEqual([]);
    expect(errorsOf({ price: 150 }, priced, {}, { price: 10 })).toHaveLength(1);
    expect(errorsOf({ price: 50 }, priced, {}, { price: 0 })).toHaveLength(1);
    expect(errorsOf({ by: "u1" }, { validate: { "%%root.by": "%%user.id" } })).toEqual([]);
  });

  it("refuses what it cannot evaluate rather than pass it", () => {
    expect(() => errorsOf({ a: 1 }, { properties: { a: { bsonType: "integer" } } })).toThrow(UnsupportedSchema);
    expect(() => errorsOf({ a: 1 }, { $ref: "#/x" })).toThrow("the keyword $ref");
    expect(() => errorsOf({ a: "x" }, { properties: { a: { pattern: "(a)\\1" } } })).toThrow(UnsupportedSchema);
    expect(() => errorsOf({ a: 1 }, { validate: { "%%args.x": 1 } })).toThrow(UnsupportedSchema);
  });
});
