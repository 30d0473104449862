import { compareStrings } from "../data/bson-order.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** By database, then collection, by code point: the same order on every machine, whatever its locale. */
export default defineControlRoute("listCollections", async (request) => ({
  collections: (await (await appOf(request)).data.collections()).sort(
    (a, b) => compareStrings(a.database, b.database) || compareStrings(a.collection, b.collection),
  ),
}));
