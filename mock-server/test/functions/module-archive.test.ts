/**
 * An app's uploaded dependencies (the reference's "Upload a Dependency Directory"): an export's
 * functions/node_modules.tar.gz, .tgz, .tar or .zip, unpacked at start into a folder of the
 * emulator's own (never the app folder), its packages what the functions require; an archive too
 * large, broken, or naming files outside its folder is named at start and not used; links are not
 * unpacked.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { zipSync } from "fflate";
import { create as createTar } from "tar";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAppFolder } from "../../src/config/app-folder.ts";
import { functionModules } from "../../src/functions/module-archive.ts";
import { anonymousLogin, functionResult, testApp } from "../helpers/app.ts";
import { appFolder } from "../helpers/app-folder.ts";
import { scratchDir } from "../helpers/scratch.ts";

const greeter = {
  "node_modules/greeter/package.json": JSON.stringify({ name: "greeter", main: "index.js" }),
  "node_modules/greeter/index.js": `module.exports = (name) => "Hello, " + name + require("./suffix");`,
  "node_modules/greeter/suffix.js": `module.exports = "!";`,
};

/** An exported app whose function requires `greeter`, with `archive` (its name → its bytes) in functions/. */
const appWithArchive = (appId: string, archive: Record<string, Uint8Array | string>): string =>
  appFolder(
    appId,
    {
      greet: `exports = (name) => require("greeter")(name);`,
      escape: `exports = () => { try { return require("../../evil"); } catch (error) { return error.code; } };`,
    },
    Object.fromEntries(Object.entries(archive).map(([name, data]) => [`functions/${name}`, data])),
  );

/** A tar (gzipped unless `.tar`) of these files, as `tar -czf node_modules.tar.gz node_modules/` makes it. */
function tarOf(files: Record<string, string>, gzip: boolean, extra?: (staging: string) => void): Uint8Array {
  const staging = scratchDir("module-archive-staging-");
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(staging, path, ".."), { recursive: true });
    writeFileSync(join(staging, path), text);
  }
  extra?.(staging);
  const out = join(staging, "out.tar");
  createTar({ file: out, cwd: staging, gzip, sync: true, portable: true }, ["node_modules"]);
  return readFileSync(out);
}

const zipOf = (files: Record<string, string>) =>
  zipSync(Object.fromEntries(Object.entries(files).map(([path, text]) => [path, new TextEncoder().encode(text)])));

describe("an app's uploaded dependencies", () => {
  const apps = {
    tgz: appWithArchive("archive-tgz", { "node_modules.tar.gz": tarOf(greeter, true) }),
    tar: appWithArchive("archive-tar", { "node_modules.tar": tarOf(greeter, false) }),
    zip: appWithArchive("archive-zip", { "node_modules.zip": zipOf(greeter) }),
  };
  let app: Awaited<ReturnType<typeof testApp>>;
  beforeAll(async () => {
    app = await testApp({ appDirs: Object.values(apps) });
  });
  afterAll(() => app.close());

  it("runs the functions with the packages of a .tar.gz, a .tar and a .zip, leaving the app folder as it was", async () => {
    for (const [kind, dir] of Object.entries(apps)) {
      const appId = `archive-${kind}`;
      const token = (await anonymousLogin(app, appId)).access_token as string;
      expect(await functionResult(app, appId, token, "greet", ["Ada"]), kind).toBe("Hello, Ada!");
      // Nothing outside the packages' folder is found from it.
      expect(await functionResult(app, appId, token, "escape", [])).toBe("MODULE_NOT_FOUND");
      expect(readdirSync(join(dir, "functions")).sort(), kind).toEqual(
        ["config.json", "escape.js", "greet.js", `node_modules.${kind === "tgz" ? "tar.gz" : kind}`].sort(),
      );
      expect(loadAppFolder(dir).notRun).toEqual([]);
    }
  });

  it("unpacks no links", () => {
    const dir = appWithArchive("links", {
      "node_modules.tar": tarOf(greeter, false, (staging) =>
        symlinkSync("/etc/passwd", join(staging, "node_modules", "greeter", "linked.js")),
      ),
    });
    expect(loadAppFolder(dir).notRun).toEqual([]);
    // (The unpacked folder is the emulator's: found through the same reading the functions use.)
    const modules = functionModules(join(dir, "functions"))!;
    expect(existsSync(join(modules, "greeter", "index.js"))).toBe(true);
    expect(existsSync(join(modules, "greeter", "linked.js"))).toBe(false);
  });

  it("removes the folders a killed emulator left, not a running one's", () => {
    // (No process has such a number: above Linux's highest.)
    const stale = join(tmpdir(), "app-services-modules-999999999-left");
    const running = join(tmpdir(), `app-services-modules-${process.ppid}-running`);
    mkdirSync(join(stale, "node_modules"), { recursive: true });
    mkdirSync(running, { recursive: true });
    try {
      // (An archive of its own: one unpacked before is not unpacked again.)
      const archive = zipOf({ ...greeter, "node_modules/greeter/stamp.txt": String(Date.now()) });
      functionModules(join(appWithArchive("swept", { "node_modules.zip": archive }), "functions"));
      expect([existsSync(stale), existsSync(running)]).toEqual([false, true]);
    } finally {
      rmSync(running, { recursive: true, force: true });
    }
  });

  it("names an archive it does not use: too large, broken, or naming files outside its folder", () => {
    const notRun = (archive: Record<string, Uint8Array | string>) =>
      loadAppFolder(appWithArchive("refused", archive)).notRun.filter((line) => line.startsWith("external"));
    expect(notRun({ "node_modules.zip": new Uint8Array(15 * 1024 * 1024 + 1) })).toEqual([
      "external dependencies of functions (functions/node_modules.zip is larger than the service's 15 MB for uploaded dependencies)",
    ]);
    expect(notRun({ "node_modules.tgz": "not an archive" })).toEqual([
      expect.stringMatching(
        /^external dependencies of functions \(functions\/node_modules\.tgz could not be unpacked: /,
      ),
    ]);
    expect(notRun({ "node_modules.zip": zipOf({ "../escaped.js": "x", ...greeter }) })).toEqual([
      'external dependencies of functions (functions/node_modules.zip names a file outside its folder: "../escaped.js")',
    ]);
  });
});
