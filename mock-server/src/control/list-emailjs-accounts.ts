import { defineControlRoute } from "./route.ts";

export default defineControlRoute("listEmailJsAccounts", async (request) => ({
  accounts: request.server.emulator.emailjs.list().map((account) => account.view()),
}));
