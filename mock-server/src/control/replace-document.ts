import { type Document, toEJSON } from "../data/documents.ts";
import { MongoService } from "../data/mongo-actions.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { asControl, documentOf } from "./extended-json.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Replaces the first match with system rights (findOneAndReplace); change streams see a `replace`. */
export default defineControlRoute("replaceDocument", async (request) => {
  const app = await appOf(request);
  const { database, collection } = request.params;
  const filter = documentOf(request.body.filter, "filter");
  const replacement = documentOf(request.body.replacement, "replacement");
  const after = (await asControl(() =>
    new MongoService(app, { kind: "system" }).run("findOneAndReplace", {
      database,
      collection,
      filter,
      update: replacement,
      returnNewDocument: true,
    }),
  )) as Document | null;
  if (!after) throw controlErrors.notFound(`no document of ${database}.${collection} matches the filter`);
  return { document: toEJSON(after) as Record<string, unknown> };
});
