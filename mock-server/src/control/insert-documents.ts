import { fromEJSON, toEJSON } from "../data/documents.ts";
import { MongoService } from "../data/mongo-actions.ts";
import { strictFormProblemIn } from "../data/strict-forms.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { asControl } from "./extended-json.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Seeds documents with system rights; change streams see the inserts like any other. */
export default defineControlRoute("insertDocuments", async (request, reply) => {
  const app = await appOf(request);
  const { database, collection } = request.params;
  let documents: unknown;
  try {
    const problem = await strictFormProblemIn(request.jsonText, request.body.documents);
    if (problem !== null) throw new Error(problem);
    documents = fromEJSON(request.body.documents);
  } catch (error) {
    throw controlErrors.validation(`invalid Extended JSON: ${(error as Error).message}`);
  }
  const result = (await asControl(() =>
    new MongoService(app, { kind: "system" }).run("insertMany", { database, collection, documents }),
  )) as { insertedIds: unknown[] };
  return reply.code(201).send({ insertedIds: result.insertedIds.map((id) => toEJSON(id)) });
});
