/**
 * The bundle is rebuilt while emulators run from it (test files, the dev stack and the e2e config
 * each build before they start one): a reader during a build gets the old file or the new one,
 * whole, never a truncated one (an empty dist/cli.js runs as a program that exits 0 at once).
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, ensureBuilt } from "./helpers/emulator-process.ts";

const root = join(import.meta.dirname, "..");
function whole(path: string, ending: RegExp): boolean {
  try {
    return ending.test(readFileSync(path, "utf8").trimEnd());
  } catch {
    return false; // gone for a moment
  }
}

describe("scripts/build.mjs", () => {
  it("replaces each output file whole: readers during a build never see part of one", async () => {
    await ensureBuilt();
    const outputs: [string, RegExp][] = [
      [cli, /\/\/# sourceMappingURL=cli\.js\.map$/],
      [join(root, "dist", "query-worker.js"), /\/\/# sourceMappingURL=query-worker\.js\.map$/],
      [join(root, "dist", "inspector", "inspector.js"), /\/\/# sourceMappingURL=inspector\.js\.map$/],
      [join(root, "dist", "inspector", "index.html"), /<\/html>$/i],
    ];
    const build = spawn(process.execPath, [join(root, "scripts", "build.mjs")], { stdio: "ignore" });
    const ended = new Promise<number | null>((resolve) => build.once("exit", resolve));
    let done = false;
    void ended.then(() => {
      done = true;
    });
    let reads = 0;
    const torn: string[] = [];
    while (!done) {
      for (const [path, ending] of outputs) {
        reads++;
        if (!whole(path, ending)) torn.push(path);
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await ended).toBe(0);
    expect(torn).toEqual([]);
    expect(reads).toBeGreaterThan(outputs.length);
    for (const [path, ending] of outputs) expect(whole(path, ending)).toBe(true);
  });
});
