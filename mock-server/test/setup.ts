/**
 * Runs before every test file of the emulator's projects. Its after-all hook is the file's first,
 * so it runs last (Vitest runs after-hooks in reverse): the file's own hooks have closed the
 * emulators using its scratch folders by then.
 */
import { afterAll } from "vitest";
import { removeScratchDirs } from "./helpers/scratch.ts";

afterAll(removeScratchDirs);
