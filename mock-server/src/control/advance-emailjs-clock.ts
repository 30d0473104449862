import { clockView } from "../state/clock.ts";
import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Moves the account's clock forward: its rate limit window follows it. */
export default defineControlRoute("advanceEmailJsClock", async (request) => {
  const account = await accountOf(request);
  account.clock.advance(request.body.advanceBy * 1000);
  request.server.emulator.events.emit({
    type: "clock",
    account: account.publicKey,
    action: "advanced",
    detail: { offsetMs: account.clock.offsetMs },
  });
  return clockView(account.clock);
});
