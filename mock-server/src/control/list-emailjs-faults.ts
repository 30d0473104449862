import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

export default defineControlRoute("listEmailJsFaults", async (request) => ({
  faults: (await accountOf(request)).faults.list(),
}));
