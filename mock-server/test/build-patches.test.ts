/**
 * The fixes of patches/ (applied to dependencies at install) are checked before a build: a
 * dependency installed without its fix would be bundled with its old answers.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { unappliedPatches } from "../scripts/build.mjs";
import { scratchDir } from "./helpers/scratch.ts";

const patch = [
  "diff --git a/node_modules/pkg/a.js b/node_modules/pkg/a.js",
  "--- a/node_modules/pkg/a.js",
  "+++ b/node_modules/pkg/a.js",
  "@@ -1,2 +1,2 @@",
  " const keep = 1;",
  "-const answer = 41;",
  "+const answer = 42;",
  "",
].join("\n");

function repoWith(installed: string): string {
  const repo = scratchDir("patches-");
  mkdirSync(join(repo, "patches"));
  writeFileSync(join(repo, "patches", "pkg+1.0.0.patch"), patch);
  mkdirSync(join(repo, "node_modules", "pkg"), { recursive: true });
  writeFileSync(join(repo, "node_modules", "pkg", "a.js"), installed);
  return repo;
}

describe("unappliedPatches", () => {
  it("names a patched file that lacks its fix, and nothing once the fix is there", () => {
    expect(unappliedPatches(repoWith("const keep = 1;\nconst answer = 41;\n"))).toEqual([
      "node_modules/pkg/a.js lacks the fix of patches/pkg+1.0.0.patch",
    ]);
    expect(unappliedPatches(repoWith("const keep = 1;\nconst answer = 42;\n"))).toEqual([]);
  });

  it("finds this repository's fixes installed", () => {
    expect(unappliedPatches()).toEqual([]);
  });
});
