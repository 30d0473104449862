import { appOf, defineControlRoute } from "./route.ts";

/** The app's active overrides, in the order they fire (newest first). */
export default defineControlRoute("listFaults", async (request) => ({ faults: (await appOf(request)).faults.list() }));
