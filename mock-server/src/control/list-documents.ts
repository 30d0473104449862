import { toEJSON } from "../data/documents.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("listDocuments", async (request) => {
  const { database, collection } = request.params;
  const docs = appOf(request).data.existing(database, collection)?.values() ?? [];
  const skip = request.query.skip ?? 0;
  const limit = request.query.limit ?? 100;
  return {
    total: docs.length,
    documents: docs.slice(skip, skip + limit).map((d) => toEJSON(d) as Record<string, unknown>),
  };
});
