/**
 * scripts/build.mjs. It builds only when an input changed since the last build (`npm run mock`
 * and `npm start` run it at every start): any change to what the bundle is made of builds again,
 * nothing else does. And the bundle is rebuilt while emulators run from it (test files, the dev
 * stack and the e2e config each build before they start one): a reader during a build gets the old
 * file or the new one, whole, never a truncated one (an empty bundle runs as a program that exits
 * 0 at once).
 */
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildBundle, bundleIsFresh, bundleState } from "../scripts/build.mjs";
import { cli, ensureBuilt } from "./helpers/emulator-process.ts";

const root = join(import.meta.dirname, "..");
/**
 * Whether the file ends as a whole one does. Only its end is read (the bundle and its map are 13 MB,
 * read hundreds of times while a build runs): a reader that opened the file while it was half
 * written would find its end missing there.
 */
function whole(path: string, ending: RegExp): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const { size } = fstatSync(fd);
    const tail = Buffer.alloc(Math.min(size, 256));
    readSync(fd, tail, 0, tail.length, size - tail.length);
    return ending.test(tail.toString("utf8").trimEnd());
  } catch {
    return false; // gone for a moment
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

describe("scripts/build.mjs", () => {
  it("replaces each output file whole: readers during a build never see part of one", async () => {
    await ensureBuilt();
    const outputs: [string, RegExp][] = [
      [cli, /\/\/# sourceMappingURL=cli\.js\.map$/],
      [join(root, "dist", "emulator.cjs"), /\/\/# sourceMappingURL=emulator\.cjs\.map$/],
      [join(root, "dist", "query-worker.js"), /\/\/# sourceMappingURL=query-worker\.js\.map$/],
      [join(root, "dist", "inspector", "inspector.js"), /\/\/# sourceMappingURL=inspector\.js\.map$/],
      [join(root, "dist", "inspector", "index.html"), /<\/html>$/i],
    ];
    const build = spawn(process.execPath, [join(root, "scripts", "build.mjs"), "--force"], { stdio: "ignore" });
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

describe("scripts/build.mjs builds only when an input changed", () => {
  // A small workspace laid out like this one: a repository with a lockfile and TypeScript settings,
  // a dependency in node_modules, and mock-server/ with the emulator's, its query worker's and the
  // inspector's sources.
  let repo: string;
  let workspace: string;
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    writeFileSync(join(repo, path), text);
  };
  const built = () => readFileSync(join(workspace, "dist", "emulator.cjs"), "utf8");
  const build = () => buildBundle({ root: workspace });
  const fresh = () => bundleIsFresh({ root: workspace });

  beforeAll(async () => {
    repo = mkdtempSync(join(tmpdir(), "build-inputs-"));
    workspace = join(repo, "mock-server");
    write(
      "package-lock.json",
      `{ "lockfileVersion": 3, "packages": { "node_modules/dep": { "version": "1.0.0" } } }\n`,
    );
    write("tsconfig.base.json", "{}\n");
    write("node_modules/dep/package.json", `{ "name": "dep", "version": "1.0.0", "main": "index.js" }\n`);
    write("node_modules/dep/index.js", `module.exports = "dep one";\n`);
    write("mock-server/package.json", `{ "type": "module" }\n`);
    write("mock-server/tsconfig.json", `{ "extends": "../tsconfig.base.json" }\n`);
    write(
      "mock-server/src/cli.ts",
      `import dep from "dep";\nimport { greeting } from "./greeting.ts";\nimport { startValidator } from "./config/start-validators.ts";\nconsole.log(greeting, dep, startValidator());\n`,
    );
    // Run from the sources it compiles; the bundle carries what its standaloneSource() answers.
    write(
      "mock-server/src/config/start-validators.ts",
      `export const startValidator = () => "compiled at run time";\nexport const standaloneSource = () => \`export const startValidator = () => "precompiled \${1 + 1}";\`;\n`,
    );
    write("mock-server/src/greeting.ts", `export const greeting = "hello one";\n`);
    write("mock-server/src/launch.ts", `export const launcher = "launcher";\n`);
    write("mock-server/src/data/query-worker.ts", `export const worker = "query worker";\n`);
    write("mock-server/src/inspector/ui/main.ts", `document.title = "inspector";\n`);
    write("mock-server/src/inspector/ui/index.html", "<html></html>\n");
    write("mock-server/src/inspector/ui/styles.css", "body {}\n");
    expect(fresh()).toBe(false);
    expect(await build()).toBe(true);
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it("leaves dist/ writable by its owner only, as the launcher's code cache needs", async () => {
    chmodSync(join(workspace, "dist"), 0o775); // as a umask of 002 makes it
    expect(await buildBundle({ root: workspace, force: true })).toBe(true);
    expect(statSync(join(workspace, "dist")).mode & 0o777).toBe(0o755);
  });

  it("does nothing when nothing changed, a file touched without a change included", async () => {
    expect(fresh()).toBe(true);
    expect(await build()).toBe(false);
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(workspace, "src", "greeting.ts"), later, later);
    expect(await build()).toBe(false);
    expect(await build()).toBe(false);
  });

  it("tells an unchanged build by its inputs' sizes and times, and a touched file by its contents", async () => {
    // Every input's time an hour back: older than the window in which a time is not trusted.
    const hourAgo = new Date(Date.now() - 3_600_000);
    const inputs = [
      "package-lock.json",
      "tsconfig.base.json",
      "node_modules/dep/index.js",
      "node_modules/dep/package.json",
      "mock-server/package.json",
      "mock-server/tsconfig.json",
      ...readdirSync(join(workspace, "src"), { recursive: true, encoding: "utf8" })
        .filter((path) => /\.\w+$/.test(path))
        .map((path) => `mock-server/src/${path}`),
      "mock-server/scripts/build.mjs",
    ];
    for (const path of inputs.filter((path) => existsSync(join(repo, path))))
      utimesSync(join(repo, path), hourAgo, hourAgo);
    expect(bundleState({ root: workspace })).toBe("same contents");
    expect(bundleState({ root: workspace })).toBe("unchanged");
    const later = new Date(hourAgo.getTime() + 60_000);
    utimesSync(join(workspace, "src", "greeting.ts"), later, later);
    expect(bundleState({ root: workspace })).toBe("same contents");
    expect(bundleState({ root: workspace })).toBe("unchanged");
  });

  it("tells a touched file by its contents where the stamp cannot be written again", () => {
    // The stamp's temporary file cannot be made (a folder holds its name): the check still answers.
    const blocker = join(workspace, "dist", `build-inputs.json.${process.pid}.tmp`);
    mkdirSync(blocker);
    try {
      const later = new Date(Date.now() - 1_800_000);
      utimesSync(join(workspace, "src", "greeting.ts"), later, later);
      expect(bundleState({ root: workspace })).toBe("same contents");
      expect(bundleState({ root: workspace })).toBe("same contents");
    } finally {
      rmSync(blocker, { recursive: true });
    }
    expect(bundleState({ root: workspace })).toBe("same contents");
    expect(bundleState({ root: workspace })).toBe("unchanged");
  });

  it("does not trust the time of a file written just before its time was taken", async () => {
    write("mock-server/src/greeting.ts", `export const greeting = "hello six";\n`);
    expect(await build()).toBe(true);
    expect(bundleState({ root: workspace })).not.toBe("changed");
    // A change of the same size within one tick of the file system's clock (its times lag the
    // clock the stamp is taken by): the stamp holds the size and time the file has now, taken a
    // millisecond later (written into it here), and only the contents tell.
    write("mock-server/src/greeting.ts", `export const greeting = "hello two";\n`);
    const stampFile = join(workspace, "dist", "build-inputs.json");
    const stamp = JSON.parse(readFileSync(stampFile, "utf8"));
    const { size, mtimeMs } = statSync(join(workspace, "src", "greeting.ts"));
    stamp.stats["mock-server/src/greeting.ts"] = [size, mtimeMs];
    stamp.statsTakenAt = mtimeMs + 1;
    writeFileSync(stampFile, JSON.stringify(stamp));
    expect(bundleState({ root: workspace })).toBe("changed");
  });

  it("puts the start validators' standalone code in the module's place", () => {
    expect(built()).toContain("precompiled 2");
    expect(built()).not.toContain("compiled at run time");
  });

  it("builds again when a source file changes, and the bundle has the change", async () => {
    write("mock-server/src/greeting.ts", `export const greeting = "hello two";\n`);
    expect(fresh()).toBe(false);
    expect(await build()).toBe(true);
    expect(built()).toContain("hello two");
    expect(await build()).toBe(false);
  });

  const changes: [string, () => void][] = [
    ["a source file is added", () => write("mock-server/src/unused.ts", "export const unused = 1;\n")],
    ["a source file is deleted", () => rmSync(join(workspace, "src", "unused.ts"))],
    [
      "a file copied as is changes (the inspector's page)",
      () => write("mock-server/src/inspector/ui/index.html", "<html><body></body></html>\n"),
    ],
    ["a dependency's code changes", () => write("node_modules/dep/index.js", `module.exports = "dep two";\n`)],
    [
      "the lockfile changes (a dependency's version)",
      () =>
        write(
          "package-lock.json",
          `{ "lockfileVersion": 3, "packages": { "node_modules/dep": { "version": "1.0.1" } } }\n`,
        ),
    ],
    [
      "the TypeScript settings change",
      () => write("tsconfig.base.json", `{ "compilerOptions": { "target": "ES2022" } }\n`),
    ],
    ["an output is missing", () => rmSync(join(workspace, "dist", "emulator.cjs"))],
    ["an output changed after the build", () => write("mock-server/dist/inspector/inspector.js", "broken")],
  ];
  it.each(changes)("builds again when %s", async (_change, change) => {
    change();
    expect(fresh()).toBe(false);
    expect(await build()).toBe(true);
    expect(fresh()).toBe(true);
    expect(built()).toContain("hello two");
  });

  it.runIf(process.platform === "linux")(
    "leaves no process of its own behind once built, as the server it starts runs in the same process",
    () => {
      const script = [
        `import { readFileSync } from "node:fs";`,
        `import { buildBundle } from ${JSON.stringify(join(root, "scripts", "build.mjs"))};`,
        `const built = await buildBundle({ root: ${JSON.stringify(workspace)}, force: true });`,
        `const children = () => readFileSync(\`/proc/self/task/\${process.pid}/children\`, "utf8").trim();`,
        // (A stopped process is listed until this one has reaped it.)
        `for (const until = Date.now() + 5000; children() !== "" && Date.now() < until; )`,
        `  await new Promise((resolve) => setTimeout(resolve, 10));`,
        `console.log(JSON.stringify({ built, children: children() }));`,
      ].join("\n");
      const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8" });
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ built: true, children: "" });
    },
  );

  it("builds when asked to, changed or not", async () => {
    expect(await buildBundle({ root: workspace, force: true })).toBe(true);
    expect(fresh()).toBe(true);
  });
});
