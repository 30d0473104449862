import { clockView } from "../state/clock.ts";
import { appOf, defineControlRoute } from "./route.ts";

export default defineControlRoute("getClock", async (request) => clockView((await appOf(request)).clock));
