import { clockView } from "../state/clock.ts";
import { accountOf } from "./emailjs-account.ts";
import { defineControlRoute } from "./route.ts";

/** Puts the account's clock back on real time (the undo of advanceEmailJsClock). */
export default defineControlRoute("resetEmailJsClock", async (request) => {
  const account = await accountOf(request);
  account.clock.set(0);
  request.server.emulator.events.emit({
    type: "clock",
    account: account.publicKey,
    action: "reset",
    detail: { offsetMs: 0 },
  });
  return clockView(account.clock);
});
