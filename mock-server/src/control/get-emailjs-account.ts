import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("getEmailJsAccount", async (request) => (await accountOf(request)).view());
