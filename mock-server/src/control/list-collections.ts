import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("listCollections", async (request) => ({
  collections: appOf(request)
    .data.list()
    .map((c) => ({ database: c.database, collection: c.name, count: c.size }))
    .sort((a, b) => `${a.database}.${a.collection}`.localeCompare(`${b.database}.${b.collection}`)),
}));
