import { controlErrors } from "../errors/catalogue.ts";
import { appClockRefusal, clockView } from "../state/clock.ts";
import { appOf, defineControlRoute } from "./route.ts";

/**
 * Moves the app's clock forward: tokens, links and sessions expire by it, schedules fall due, and
 * functions and the database read their time from it (docs/decisions/0063).
 */
export default defineControlRoute("advanceClock", async (request) => {
  const app = await appOf(request);
  const refusal = appClockRefusal(app.clock.offsetMs + request.body.advanceBy * 1000);
  if (refusal !== null) throw controlErrors.validation(refusal);
  app.clock.advance(request.body.advanceBy * 1000);
  request.server.emulator.events.emit({
    type: "clock",
    appId: app.appId,
    action: "advanced",
    detail: { offsetMs: app.clock.offsetMs },
  });
  return clockView(app.clock);
});
