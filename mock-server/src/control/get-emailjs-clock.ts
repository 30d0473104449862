import { clockView } from "../state/clock.ts";
import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getEmailJsClock", async (request) => clockView((await accountOf(request)).clock));
