import { appOf, defineControlRoute } from "./route.ts";

/**
 * Drops a collection and its documents. One that existed is a change like a write's: its `drop`
 * event ends the collection's change streams (after an `invalidate`), reaches the app's database
 * triggers that ask for it, and the inspector's live view.
 */
export default defineControlRoute("dropCollection", async (request, reply) => {
  const app = await appOf(request);
  await app.data.drop(request.params.database, request.params.collection);
  return reply.code(204).send();
});
