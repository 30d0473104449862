import { clockView } from "../state/clock.ts";
import { appOf, defineControlRoute } from "./route.ts";

/** Puts the app's clock back on real time (the undo of advanceClock). */
export default defineControlRoute("resetClock", async (request) => {
  const app = await appOf(request);
  app.clock.set(0);
  request.server.emulator.events.emit({ type: "clock", appId: app.appId, action: "reset", detail: { offsetMs: 0 } });
  return clockView(app.clock);
});
