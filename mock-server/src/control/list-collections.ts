import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("listCollections", async (request) => ({
  collections: (await (await appOf(request)).data.collections()).sort((a, b) =>
    `${a.database}.${a.collection}`.localeCompare(`${b.database}.${b.collection}`),
  ),
}));
