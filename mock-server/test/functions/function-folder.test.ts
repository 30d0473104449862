/**
 * An app folder's functions, watched for changes (function-folder.ts): the functions folder and
 * its subfolders (functions named "sub/name"), not node_modules, whose thousands of folders would
 * each take a watch.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FunctionFolder } from "../../src/functions/function-folder.ts";

const dir = mkdtempSync(join(tmpdir(), "function-folder-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(path: string, text: string) {
  mkdirSync(join(dir, path, ".."), { recursive: true });
  writeFileSync(join(dir, path), text);
}

describe("an app folder's functions", () => {
  it("are watched in their folder and subfolders, not in node_modules", async () => {
    write("functions/config.json", JSON.stringify([{ name: "top" }, { name: "sub/deep" }]));
    write("functions/top.js", "exports = () => 1;");
    write("functions/sub/deep.js", "exports = () => 2;");
    write("functions/node_modules/pkg/lib/index.js", "module.exports = 3;");
    const folder = new FunctionFolder(dir, true);
    try {
      expect(folder.watched.sort()).toEqual([join(dir, "functions"), join(dir, "functions", "sub")]);
      expect(folder.functions().get("sub/deep")?.source).toBe("exports = () => 2;");
      write("functions/sub/deep.js", "exports = () => 20;");
      await expect.poll(() => folder.functions().get("sub/deep")?.source).toBe("exports = () => 20;");
      // A subfolder made later is watched from then on.
      write("functions/later/new.js", "exports = () => 4;");
      await expect.poll(() => folder.watched).toContain(join(dir, "functions", "later"));
    } finally {
      folder.close();
    }
  });
});
