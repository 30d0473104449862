/**
 * Scratch folders for tests: made under the system's temporary folder and removed when the test
 * file ends (`test/setup.ts` registers the removal), so `npm test` leaves nothing behind.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made = new Set<string>();

/** A new, empty folder (its path) named from `prefix`, removed when the test file ends. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Removes the scratch folders made so far (what is already gone is skipped). */
export function removeScratchDirs(): void {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  made.clear();
}
