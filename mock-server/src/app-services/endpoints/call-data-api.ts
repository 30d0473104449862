/**
 * The app's Data API (its generated endpoints, decision 0035): `POST
 * /app/<appId>/endpoint/data/<version>/action/<action>` runs a MongoDB action on a collection,
 * under the app's rules, as the user the Data API's settings name — authenticated as a custom
 * endpoint's request is (call-endpoint.ts) — and answers as the Data API's document describes:
 * `{documents}`, `{document}`, `{insertedId}`, `{insertedIds}`, `{matchedCount, modifiedCount,
 * upsertedId?}`, `{deletedCount}`, as JSON or Extended JSON.
 */
import { mongoServiceOf } from "../../config/app-config.ts";
import { type Document, isDocument } from "../../data/documents.ts";
import { fromEJSONTextInSlices } from "../../data/ejson-in-slices.ts";
import { type MongoAction, MongoService } from "../../data/mongo-actions.ts";
import { holdsMarks, strictFormProblemIn } from "../../data/strict-forms.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { contextRequest } from "../../functions/app-functions.ts";
import { addressKey } from "../../http/client-address.ts";
import { JsonBodyError, parseJsonBodyInSlices, slicedFrom } from "../../http/json-body.ts";
import { takeActionTurn } from "../functions/call-caps.ts";
import { requestExpansion } from "../request-expansion.ts";
import { defineRoute } from "../route.ts";
import { checkValidation, runAs, valueReply } from "./call-endpoint.ts";

/**
 * A body's JSON, a large one read in slices (a body of 200,000 fields at once is ~0.1 s), as
 * `fromEJSONTextInSlices` reads it (a text the slices' reader refuses, read at once).
 */
async function jsonOf(text: string): Promise<unknown> {
  if (text.length < slicedFrom) return JSON.parse(text);
  try {
    return await parseJsonBodyInSlices(text);
  } catch (error) {
    if (error instanceof JsonBodyError) return JSON.parse(text);
    throw error;
  }
}

/**
 * The request's body, read as Extended JSON whichever of JSON and Extended JSON it says it is; a
 * large one in slices, as a function call's body is (a document of 200,000 fields: ~1 s at once).
 */
async function bodyOf(raw: unknown): Promise<Document> {
  const text = Buffer.isBuffer(raw) ? raw.toString("utf8") : "";
  let body: unknown;
  try {
    // As the client API reads a function call's arguments (numbers as JS numbers, dates checked).
    if (await holdsMarks(text)) {
      const problem = await strictFormProblemIn(null, await jsonOf(text));
      if (problem !== null) throw new Error(problem);
    }
    body = await fromEJSONTextInSlices(text);
  } catch (error) {
    throw errors.badRequest(`invalid request body: ${(error as Error).message}`);
  }
  if (!isDocument(body)) throw errors.badRequest("the request body must be a document");
  return body;
}

const optional = (body: Document, field: string, want: "document" | "array" | "number") => {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  const ok =
    want === "document" ? isDocument(value) : want === "array" ? Array.isArray(value) : Number.isFinite(Number(value));
  if (!ok) throw errors.badRequest(`'${field}' must be ${want === "array" ? "an array" : `a ${want}`}`);
  return want === "number" ? Number(value) : value;
};

/** A find: its filter, sort, skip, limit and projection as one pipeline (the rules read it as any aggregation). */
function findPipeline(body: Document): Document[] {
  const pipeline: Document[] = [{ $match: (optional(body, "filter", "document") as Document | undefined) ?? {} }];
  const sort = optional(body, "sort", "document");
  if (sort && Object.keys(sort as Document).length > 0) pipeline.push({ $sort: sort });
  const skip = optional(body, "skip", "number");
  if (skip) pipeline.push({ $skip: skip });
  const limit = optional(body, "limit", "number");
  if (limit) pipeline.push({ $limit: limit });
  const projection = optional(body, "projection", "document");
  if (projection && Object.keys(projection as Document).length > 0) pipeline.push({ $project: projection });
  return pipeline;
}

/** The MongoDB action a Data API action is, and how its answer is shaped. */
async function runAction(
  service: MongoService,
  action: string,
  body: Document,
  namespace: Document,
): Promise<Document> {
  const filter = (optional(body, "filter", "document") as Document | undefined) ?? {};
  const run = (name: MongoAction, args: Document) => service.run(name, { ...namespace, ...args });
  switch (action) {
    case "find":
      return { documents: await run("aggregate", { pipeline: findPipeline(body) }) };
    case "aggregate": {
      const pipeline = optional(body, "pipeline", "array");
      if (!pipeline) throw errors.badRequest("'pipeline' is required");
      return { documents: await run("aggregate", { pipeline }) };
    }
    case "findOne": {
      const projection = optional(body, "projection", "document");
      return { document: await run("findOne", { query: filter, ...(projection ? { project: projection } : {}) }) };
    }
    case "insertOne":
      return (await run("insertOne", { document: body.document })) as Document;
    case "insertMany":
      return (await run("insertMany", { documents: body.documents })) as Document;
    case "updateOne":
    case "updateMany":
      return (await run(action, { query: filter, update: body.update, upsert: body.upsert === true })) as Document;
    case "deleteOne":
    case "deleteMany":
      return (await run(action, { query: filter })) as Document;
    default:
      throw errors.endpointNotFound(`/data/v1/action/${action}`);
  }
}

export default defineRoute("callDataApi", "none", async (request, reply) => {
  const app = request.appRuntime!;
  const { version, action } = request.params;
  const settings = app.config.dataApi;
  const route = `/data/${version}/action/${action}`;
  if (!settings || settings.disabled === true || !(settings.versions ?? ["v1"]).includes(version))
    throw errors.endpointNotFound(route);
  const raw = Buffer.isBuffer(request.body) ? request.body : undefined;
  const expansion = requestExpansion(request);
  const requestDocument = { ...contextRequest(expansion()), webhookUrl: route, httpMethod: request.method };
  const user = await runAs(request, reply, app, { name: "Data API", ...settings }, requestDocument);
  checkValidation(request, settings, raw);
  await app.functions.authorize("Data API", settings.canEvaluate, user, () => ({ ...expansion(), webhookUrl: route }));
  const body = await bodyOf(raw);
  const dataSource = body.dataSource;
  // (The service's name, or the linked cluster's, as the Data API's examples give it.)
  const { dataSource: linked } = app.config;
  if (
    dataSource !== mongoServiceOf(app.config) &&
    (linked?.clusterName === undefined || dataSource !== linked.clusterName)
  )
    throw errors.serviceNotFound(String(dataSource ?? ""));
  const namespace = { database: body.database, collection: body.collection };
  // (Without fetch_custom_user_data the user's custom data is not read: `%%user.custom_data` is {}.)
  const address = addressKey(request.ip);
  const principal = user
    ? {
        kind: "user" as const,
        user,
        request: expansion,
        address,
        withoutCustomData: settings.fetchCustomUserData !== true,
      }
    : { kind: "system" as const, address };
  // Its caller's actions take turns with the caller's others (its user's, then its address's); one
  // whose client leaves while it waits never runs.
  const endTurn = await takeActionTurn(app, user, request.ip, reply.raw, request.server.emulator.options);
  if (endTurn === null) {
    reply.hijack();
    return reply;
  }
  let answer: Awaited<ReturnType<typeof runAction>>;
  try {
    answer = await runAction(new MongoService(app, principal), action, body, namespace);
  } finally {
    endTurn();
  }
  const value = valueReply(request, settings.returnType, answer);
  return reply.code(200).header("content-type", value.type).send(value.bytes);
});
