/** The tests' scratch folders: removed whole, so a test run leaves nothing in the temporary folder. */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { removeScratchDirs, scratchDir } from "./helpers/scratch.ts";

describe("a scratch folder", () => {
  it("is made empty and removed with what was written in it", () => {
    const dir = scratchDir("scratch-");
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    writeFileSync(join(dir, "a", "b", "c.txt"), "c");
    const gone = scratchDir("scratch-");
    removeScratchDirs();
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(gone)).toBe(false);
    // (Removing again, or after a test removed its own, is nothing.)
    expect(() => removeScratchDirs()).not.toThrow();
  });
});
