import { toEJSON } from "../data/documents.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("listDocuments", async (request) => {
  const { database, collection } = request.params;
  const skip = request.query.skip ?? 0;
  const limit = request.query.limit ?? 100;
  const page = await (await appOf(request)).data.page(database, collection, skip, limit);
  return {
    total: page.total,
    documents: page.documents.map((d) => toEJSON(d) as Record<string, unknown>),
  };
});
