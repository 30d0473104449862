/**
 * Generated documents of nested documents and arrays (of arrays too) over a few names and values,
 * and queries of their paths — dotted, with steps of digits too — in `$and`, `$or`, `$in`, `$all`
 * and `$elemMatch`: for
 * checking that what a store hands the query engine for a query holds every document the engine
 * matches in the whole collection (test/postgres/pushdown.test.ts, test/data/indexed-reads.test.ts).
 */
import { Decimal128, ObjectId } from "bson";
import fc from "fast-check";

const names = ["a", "b", "0", "1"];
// (Numbers of each kind a document holds: 1 also as a Decimal128 of another text, 0 as -0.)
const scalars = [
  "x",
  "y",
  true,
  false,
  1,
  2.5,
  0,
  -0,
  Decimal128.fromString("1.0"),
  new ObjectId("65a1b2c3d4e5f60718293a51"),
  null,
];

/** Numbers more often: equal across kinds (1 and 1.0 as a Decimal128, 0 and -0), the cases SQL can miss. */
const numbers = [
  1,
  0,
  -0,
  0.1,
  Decimal128.fromString("1.0"),
  Decimal128.fromString("0E-5"),
  Decimal128.fromString("0.10"),
];

const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(...scalars),
    { arbitrary: fc.constantFrom(...numbers), weight: 2 },
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...names), tie("value"), { maxKeys: 3 }),
  ),
}));

/** A collection's documents (without `_id`). */
export const nestedDocuments = fc.array(fc.dictionary(fc.constantFrom(...names), value, { maxKeys: 3 }), {
  minLength: 1,
  maxLength: 12,
});

const path = fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 3 }).map((steps) => steps.join("."));
const scalar = fc.constantFrom(...scalars);
const condition = fc.oneof(
  scalar,
  { arbitrary: fc.constantFrom(1, 0, Decimal128.fromString("1.00"), Decimal128.fromString("0.1")), weight: 2 },
  fc.constant({ $in: ["x", true] }),
  fc.constant({ $eq: "y" }),
  fc.constant({ $all: ["x", true] }),
  scalar.map((v) => ({ $all: [v] })),
  fc
    .dictionary(fc.constantFrom(...names), fc.oneof(scalar, fc.constant({ $ne: "x" })), { minKeys: 1, maxKeys: 2 })
    .map((match) => ({ $elemMatch: match })),
);
const equality = fc.tuple(path, condition).map(([field, c]) => ({ [field]: c }));

/** A few queries of the documents' paths. */
export const pathQueries = fc.array(
  fc.oneof(
    equality,
    fc.array(equality, { minLength: 2, maxLength: 3 }).map((clauses) => ({ $or: clauses })),
    fc.tuple(equality, fc.array(equality, { minLength: 2, maxLength: 3 })).map(([one, clauses]) => ({
      $and: [one, { $or: clauses }],
    })),
  ),
  { minLength: 1, maxLength: 4 },
);
