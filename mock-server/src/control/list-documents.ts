import { type Document, toEJSON } from "../data/documents.ts";
import { MongoService } from "../data/mongo-actions.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { asControl, documentOf } from "./extended-json.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** The `filter` parameter: Extended JSON text of a MongoDB query. */
function filterOf(text: string): Document {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw controlErrors.validation('filter must be a MongoDB query as Extended JSON text, e.g. {"done":true}');
  }
  return documentOf(value, "filter");
}

/**
 * A page of a collection in natural order. With a filter, the matching documents, found as a
 * system `find` would (the query limits apply, MongoDB's errors are the 400's text).
 */
export default defineControlRoute("listDocuments", async (request) => {
  const app = await appOf(request);
  const { database, collection } = request.params;
  const skip = request.query.skip ?? 0;
  const limit = request.query.limit ?? 100;
  const asEJSON = (docs: Document[]) => docs.map((d) => toEJSON(d) as Record<string, unknown>);
  if (request.query.filter === undefined || request.query.filter.trim() === "") {
    const page = await app.data.page(database, collection, skip, limit);
    return { total: page.total, documents: asEJSON(page.documents) };
  }
  const query = filterOf(request.query.filter);
  const service = new MongoService(app, { kind: "system" });
  const args = { database, collection, query };
  const [total, found] = await asControl(() =>
    Promise.all([
      service.run("count", args) as Promise<{ toNumber(): number }>,
      service.run("find", { ...args, limit: skip + limit }) as Promise<Document[]>,
    ]),
  );
  return { total: total.toNumber(), documents: asEJSON(found.slice(skip)) };
});
