import { defineControlRoute } from "./route.ts";

export default defineControlRoute("listEmailJsAccounts", async (request) => ({
  accounts: (await request.server.emulator.emailjs.list()).map((account) => account.view()),
}));
