/**
 * Every live event a test's emulators emit is held to the control document's `ControlEvent`: a new
 * kind or action, or a changed shape, fails the test it happened in (test/setup.ts), whichever way
 * the test itself reads events, if at all.
 */
import type { FastifyInstance } from "fastify";
import { controlEventProblem } from "./contract-rules.ts";

const problems: string[] = [];

export function checkEvents(app: FastifyInstance): void {
  const off = app.emulator.events.subscribe((event) => {
    const problem = controlEventProblem(event);
    if (problem !== null) problems.push(problem);
  });
  app.addHook("onClose", async () => {
    off();
  });
}

/** The problems seen since the last call. */
export const takeEventProblems = (): string[] => problems.splice(0);
