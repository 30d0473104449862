/**
 * The mongodb-atlas service's actions a client may call through `functions/call`. A module of its
 * own, without dependencies, so the inspector's bundle can offer the same list.
 */
export const mongoActions = [
  "find",
  "findOne",
  "count",
  "aggregate",
  "insertOne",
  "insertMany",
  "updateOne",
  "updateMany",
  "deleteOne",
  "deleteMany",
  "findOneAndUpdate",
  "findOneAndReplace",
  "findOneAndDelete",
] as const;
export type MongoAction = (typeof mongoActions)[number];
/**
 * What a function's collection may ask beyond the client's actions: a `bulkWrite`'s `replaceOne`,
 * whose answer is the driver's counts of a replacement (matched, modified, the upserted id).
 */
export type FunctionMongoAction = MongoAction | "replaceOne";
