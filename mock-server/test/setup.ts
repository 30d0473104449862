/**
 * Runs before every test file of the emulator's projects. Its after-all hook is the file's first,
 * so it runs last (Vitest runs after-hooks in reverse): the file's own hooks have closed the
 * emulators using its scratch folders by then. After each test, the live events its emulators
 * emitted must all be ones the control document describes (helpers/checked-events.ts).
 */
import { afterAll, afterEach, expect } from "vitest";
import { takeEventProblems } from "./helpers/checked-events.ts";
import { removeScratchDirs } from "./helpers/scratch.ts";

afterEach(() => {
  expect(takeEventProblems(), "live events the control document does not describe").toEqual([]);
});
afterAll(removeScratchDirs);
