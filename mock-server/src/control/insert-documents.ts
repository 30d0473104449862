import { fromEJSON, toEJSON } from "../data/documents.ts";
import { MongoService } from "../data/mongo-actions.ts";
import { AppServicesError, controlErrors } from "../errors/catalogue.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Seeds documents with system rights; change streams see the inserts like any other. */
export default defineControlRoute("insertDocuments", async (request, reply) => {
  const app = await appOf(request);
  const { database, collection } = request.params;
  let documents: unknown;
  try {
    documents = fromEJSON(request.body.documents);
  } catch (error) {
    throw controlErrors.validation(`invalid Extended JSON: ${(error as Error).message}`);
  }
  try {
    const result = (await new MongoService(app, { kind: "system" }).run("insertMany", {
      database,
      collection,
      documents,
    })) as {
      insertedIds: unknown[];
    };
    return reply.code(201).send({ insertedIds: result.insertedIds.map((id) => toEJSON(id)) });
  } catch (error) {
    if (error instanceof AppServicesError) {
      // A duplicate `_id`, or the app's document limits (docs/decisions/0012-quotas.md).
      throw /^Duplicate key|^maximum (number|size) of documents/.test(error.message)
        ? controlErrors.conflict(error.message)
        : controlErrors.validation(error.message);
    }
    throw error;
  }
});
