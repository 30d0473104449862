import { type Document, toEJSON } from "../data/documents.ts";
import { MongoService } from "../data/mongo-actions.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { asControl, documentOf } from "./extended-json.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Deletes the first match with system rights (findOneAndDelete); change streams see a `delete`. */
export default defineControlRoute("deleteDocument", async (request) => {
  const app = await appOf(request);
  const { database, collection } = request.params;
  const filter = documentOf(request.body.filter, "filter");
  const deleted = (await asControl(() =>
    new MongoService(app, { kind: "system" }).run("findOneAndDelete", { database, collection, filter }),
  )) as Document | null;
  if (!deleted) throw controlErrors.notFound(`no document of ${database}.${collection} matches the filter`);
  return { document: toEJSON(deleted) as Record<string, unknown> };
});
