/**
 * Generated data actions — inserts of documents of every kind of value, finds, counts, updates,
 * upserts, deletes, aggregations (joins among them) and a system function's pipelines — and an
 * app signed in to send them to, for the tests that set the stores against each other and race
 * instances (test/postgres/stores-agree.test.ts, data-races.test.ts).
 */
import fc from "fast-check";
import type { FastifyInstance } from "fastify";
import { anonymousLogin, call, newOpenApp } from "./app.ts";

const names = ["a", "b"];
const scalar = fc.constantFrom<unknown>(
  "x",
  "y",
  "",
  true,
  false,
  null,
  { $numberInt: "1" },
  { $numberInt: "2" },
  { $numberDouble: "1.0" },
  { $numberDouble: "2.5" },
  { $numberLong: "1" },
  { $numberDecimal: "1.0" },
  { $numberDecimal: "2.50" },
  { $oid: "65a1b2c3d4e5f60718293a51" },
  { $date: { $numberLong: "0" } },
  // Values whose text is easy to get wrong: a store that hands back what it kept shows it.
  { $numberDouble: "-0.0" },
  { $numberDouble: "NaN" },
  { $numberDouble: "-Infinity" },
  { $numberDouble: "1e+300" },
  { $numberDouble: "9007199254740993" },
  { $numberLong: "9223372036854775807" },
  { $numberLong: "-9007199254740993" },
  { $numberDecimal: "-0" },
  { $numberDecimal: "NaN" },
  { $numberDecimal: "1.000000000000000000000000000000000E+6144" },
  'é\u0000𝄞"\\',
  // Half of a surrogate pair: read as U+FFFD by both (PostgreSQL's jsonb cannot hold it).
  "x\ud800",
  { $binary: { base64: "AQI=", subType: "00" } },
  { $regularExpression: { pattern: "^x", options: "i" } },
  { $timestamp: { t: 1, i: 2 } },
  { $minKey: 1 },
  { $maxKey: 1 },
  { $date: { $numberLong: "-62135596800001" } },
  { $symbol: "s" },
);
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    { arbitrary: scalar, weight: 4 },
    { arbitrary: fc.array(tie("value"), { maxLength: 3 }), weight: 1 },
    { arbitrary: fc.dictionary(fc.constantFrom(...names), tie("value"), { maxKeys: 2 }), weight: 1 },
  ),
}));
export const document = fc.dictionary(fc.constantFrom(...names), value, { maxKeys: 3 });
const path = fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 2 }).map((steps) => steps.join("."));
/** A query's conditions over these values: equalities, comparisons, and the operators of the file's head. */
function queriesOf(values: fc.Arbitrary<unknown>) {
  const condition = fc.oneof(
    { arbitrary: values, weight: 4 },
    values.map((v) => ({ $eq: v })),
    values.map((v) => ({ $ne: v })),
    fc.tuple(values, values).map((vs) => ({ $in: vs })),
    fc.tuple(values, values).map((vs) => ({ $nin: vs })),
    fc.tuple(fc.constantFrom("$gt", "$gte", "$lt", "$lte"), values).map(([op, v]) => ({ [op]: v })),
    fc.boolean().map((v) => ({ $exists: v })),
    fc.integer({ min: 0, max: 2 }).map((n) => ({ $size: n })),
    fc
      .constantFrom("string", "number", "array", "object", "double", "int", "long", "decimal")
      .map((t) => ({ $type: t })),
    fc.tuple(values, values).map((vs) => ({ $all: vs })),
    fc.tuple(fc.constantFrom(...names), values).map(([name, v]) => ({ $elemMatch: { [name]: v } })),
  );
  const clause = fc.dictionary(path, condition, { minKeys: 1, maxKeys: 1 });
  return fc.oneof(
    clause,
    fc.constant({}),
    fc.array(clause, { minLength: 2, maxLength: 3 }).map((clauses) => ({ $or: clauses })),
    fc.array(clause, { minLength: 2, maxLength: 2 }).map((clauses) => ({ $and: clauses })),
  );
}
const query = queriesOf(scalar);
/**
 * A rule's filter: a query over plain JSON values, as an app's config writes one (a rule's filter is
 * not read as Extended JSON: `{"$numberInt": "2"}` there is an unknown operator, refused only when
 * a document is matched against it).
 */
export const ruleFilter = queriesOf(fc.constantFrom<unknown>("x", "y", "", true, false, null, 1, 2, 2.5));
const number = fc.constantFrom({ $numberInt: "1" }, { $numberDouble: "0.5" }, { $numberDecimal: "1.10" });

/** Where a pipeline names the collection of the run it is sent in. */
const self = "%self";

/** An update of one path: `$set` of a value, `$inc` of a number, `$unset`. */
const update = fc.oneof(
  fc.tuple(path, value).map(([p, v]) => ({ $set: { [p]: v } })),
  fc.tuple(path, number).map(([p, n]) => ({ $inc: { [p]: n } })),
  path.map((p) => ({ $unset: { [p]: "" } })),
);

/** One data action: its name and argument (the namespace added when sent). */
export type Action = readonly [name: string, argument: Record<string, unknown>];
const act = (name: string, argument: Record<string, unknown>): Action => [name, argument];
export const action: fc.Arbitrary<Action> = fc.oneof(
  fc.array(document, { minLength: 1, maxLength: 4 }).map((documents) => act("insertMany", { documents })),
  fc
    .record(
      { query, sort: fc.tuple(path, fc.constantFrom(1, -1)), limit: fc.integer({ min: 0, max: 3 }) },
      { requiredKeys: ["query"] },
    )
    .map(({ query, sort, limit }) =>
      act("find", { query, ...(sort ? { sort: { [sort[0]]: sort[1], _id: 1 } } : {}), ...(limit ? { limit } : {}) }),
    ),
  fc
    .tuple(query, fc.dictionary(path, fc.constantFrom(0, 1), { minKeys: 1, maxKeys: 2 }))
    .map(([q, project]) => act("find", { query: q, project })),
  query.map((q) => act("count", { query: q })),
  fc
    .tuple(query, fc.tuple(path, fc.constantFrom(1, -1)))
    .map(([q, [p, order]]) => act("findOneAndDelete", { filter: q, sort: { [p]: order, _id: 1 } })),
  fc.tuple(query, path).map(([q, p]) => act("findOne", { query: q, project: { [p]: 1 } })),
  // An _id the collection may hold already: MongoDB's duplicate key error, the same on both.
  fc
    .tuple(document, fc.integer({ min: 0, max: 12 }))
    .map(([doc, id]) => act("insertOne", { document: { ...doc, _id: { $numberInt: String(id) } } })),
  fc.tuple(query, update).map(([q, u]) => act("updateMany", { query: q, update: u })),
  fc
    .tuple(query, path, value, fc.boolean())
    .map(([q, p, v, upsert]) => act("updateOne", { query: q, update: { $set: { [p]: v } }, upsert })),
  fc
    .tuple(query, number, fc.boolean())
    .map(([q, n, returnNewDocument]) =>
      act("findOneAndUpdate", { filter: q, update: { $inc: { n } }, returnNewDocument }),
    ),
  query.map((q) => act("deleteMany", { query: q })),
  query.map((q) => act("deleteOne", { query: q })),
  query.map((q) =>
    act("aggregate", { pipeline: [{ $match: q }, { $group: { _id: "$a", n: { $sum: 1 } } }, { $sort: { _id: 1 } }] }),
  ),
  // Joins, by an app user (the joined collection read under its rules too) and by a system
  // function: the collection read again inside the pipeline, through the store's reader narrowed
  // by the rule's filter.
  ...(["aggregate", "system aggregate"] as const).flatMap((by) => [
    fc.tuple(query, path, path).map(([q, local, foreign]) =>
      act(by, {
        pipeline: [
          { $match: q },
          { $lookup: { from: self, localField: local, foreignField: foreign, as: "j" } },
          { $project: { j: "$j._id" } },
        ],
      }),
    ),
    fc.tuple(query, query, path).map(([q, other, sortBy]) =>
      act(by, {
        pipeline: [
          { $match: q },
          { $unionWith: { coll: self, pipeline: [{ $match: other }] } },
          { $sort: { [sortBy]: -1, _id: 1 } },
          { $limit: 4 },
        ],
      }),
    ),
  ]),
);

/** A system function that runs a pipeline on a collection of `d` (`system aggregate`). */
const pipelineFunction = {
  source: `exports = (collection, pipeline) =>
    context.services.get("mongodb-atlas").db("d").collection(collection).aggregate(pipeline).toArray();`,
  runAsSystem: true,
};

/**
 * An open app on `app` (with `pipelineFunction`) and a user signed in to it, for every run of a
 * property (each run its own collection); `send` answers a data action on a collection of `d` as its
 * status and body, the ids the emulator makes (an upsert's) masked: they differ between emulators.
 * With `also` (another instance on `app`'s database), every other action is sent there.
 */
export async function signedIn(app: FastifyInstance, config: Record<string, unknown> = {}, also?: FastifyInstance) {
  // (One user writes every run's documents: its limits lifted, or the faster store meets them first.)
  const limits = {
    writesPerSecondPerAnonymousUser: 100_000,
    documentsPerAnonymousUser: 100_000,
    documentBytesPerAnonymousUser: 256 * 1024 * 1024,
  };
  const appId = await newOpenApp(app, { functions: { pipeline: pipelineFunction }, limits, ...config });
  const token = (await anonymousLogin(app, appId)).access_token;
  let sent = 0;
  /** Sends an action (`via` another instance, another user's token, where a test says). */
  const send = async (
    collection: string,
    name: string,
    argument: Record<string, unknown>,
    via: { to?: FastifyInstance; token?: string } = {},
  ) => {
    const named = JSON.parse(JSON.stringify(argument).replaceAll(JSON.stringify(self), JSON.stringify(collection)));
    const { response } = await call(via.to ?? (also && ++sent % 2 === 0 ? also : app), "callFunction", {
      method: "POST",
      url: `/api/client/v2.0/app/${appId}/functions/call`,
      headers: { authorization: `Bearer ${via.token ?? token}` },
      payload:
        name === "system aggregate"
          ? { name: "pipeline", arguments: [collection, named.pipeline] }
          : { name, service: "mongodb-atlas", arguments: [{ database: "d", collection, ...named }] },
    });
    return { status: response.statusCode, body: masked(response.body.replace(/"link":"[^"]*"/, "")) };
  };
  return { appId, token, send };
}

/** A text with the ObjectIds other than the generated documents' one masked. */
export const masked = (text: string) =>
  text
    .replace(/"\$oid":"(?!65a1b2c3d4e5f60718293a51)[0-9a-f]{24}"/g, '"$oid":"made"')
    .replace(/ObjectId\('(?!65a1b2c3d4e5f60718293a51)[0-9a-f]{24}'\)/g, "ObjectId('made')");

/** The actions of a run: the collection's documents inserted first, every document numbered in order. */
export function numbered(documents: Record<string, unknown>[], actions: Action[]): Action[] {
  let next = 0;
  const ids = (docs: unknown) =>
    (docs as Record<string, unknown>[]).map((doc) => ({ ...doc, _id: { $numberInt: String(next++) } }));
  return [act("insertMany", { documents }), ...actions].map(([name, argument]) =>
    name === "insertMany" ? act(name, { documents: ids(argument.documents) }) : act(name, argument),
  );
}

/** A write: its name and argument (the namespace added when sent). */
export const write = fc.oneof(
  fc.array(document, { minLength: 1, maxLength: 3 }).map((documents) => act("insertMany", { documents })),
  fc.tuple(query, update).map(([q, u]) => act("updateMany", { query: q, update: u })),
  fc
    .tuple(query, document)
    .map(([q, replacement]) => act("findOneAndReplace", { filter: q, replacement, returnNewDocument: true })),
  fc
    .tuple(query, path, value)
    .map(([q, p, v]) => act("updateOne", { query: q, update: { $set: { [p]: v } }, upsert: true })),
  query.map((q) => act("deleteMany", { query: q })),
);
