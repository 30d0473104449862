// Bundles the emulator and its dependencies into dist/emulator.cjs (run by dist/cli.js),
// so it starts as one plain JavaScript file without a TypeScript loader (its start validators
// precompiled: `startValidatorsPlugin`), and the inspector UI into
// dist/inspector/ (one browser bundle, its page and stylesheet), which the emulator serves at /_mock/.
//
// `node scripts/build.mjs [--force]` builds only when an input changed since the last build (a
// start of `npm run mock` or `npm start` then costs a few tens of milliseconds here, not a build):
// dist/build-inputs.json keeps a digest of the inputs' contents — every file under src/ (an added
// or deleted one included), each file the bundles read from elsewhere (the documents, the
// dependencies), the lockfile, the TypeScript settings and this script — and the size and time of
// each output, so a changed or missing output is built again too. It keeps each input's size and
// modification time as well: when none changed (and no file was added under src/), the bundle is
// fresh without reading the inputs (that reading was a tenth of a start); when one did, the
// contents decide, and a touched file that did not change keeps the bundle. As git does with its
// index, a file modified within two seconds before its time was taken is not trusted by its time.
//
// Every file is written whole under a temporary name and renamed over the old one: an emulator
// started (or a page served) while a build runs — tests and the dev stack build beside running
// emulators — reads the previous file or the new one, never half of one.
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(import.meta.url);
// Dependencies are bundled too: one file loads much faster than hundreds of modules (start-up is a
// benchmark target), and its code is in the launcher's code cache. (The function sandbox still
// reads bson's browser build from the package on disk.) pg-native is pg's optional native binding,
// never installed (pg falls back to JavaScript); esbuild is what bundles the query worker when the
// emulator runs from its sources, never from the bundle.
const external = ["pg-native", "esbuild"];

/**
 * The dereferenced OpenAPI documents (1.5 MB, imported as ES modules by openapi/src/documents.ts)
 * as `JSON.parse` of one string: V8 scans a string literal and parses JSON faster than it compiles
 * the same data as an object literal, and the bundle is compiled at every start. (Dependencies'
 * JSON files are `require`d as CommonJS: esbuild's own loader keeps those.)
 */
const jsonAsParse = {
  name: "json-as-parse",
  setup(build) {
    build.onLoad({ filter: /[\\/]openapi[\\/]src[\\/]generated[\\/][^\\/]+\.json$/ }, (args) => ({
      contents: `export default JSON.parse(${JSON.stringify(JSON.stringify(JSON.parse(readFileSync(args.path, "utf8"))))});`,
      loader: "js",
    }));
  },
};

/** src/config/start-validators.ts, whose place in the bundle its precompiled code takes. */
const startValidatorsModule = /[\\/]src[\\/]config[\\/]start-validators\.ts$/;

/**
 * The start validators' standalone code (src/config/start-validators.ts): the module is bundled
 * on its own and run here, and what its `standaloneSource()` answers — Ajv's code of the same
 * schemas by the same `createAjv` — stands in for the module in the emulator's bundle, so that a
 * start compiles no validator before it serves.
 */
async function startValidatorsPlugin(root) {
  const { build } = await import("esbuild");
  const entry = join(root, "src/config/start-validators.ts");
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    external,
    plugins: [jsonAsParse],
    absWorkingDir: root,
    write: false,
    logLevel: "warning",
  });
  const module = { exports: {} };
  new Function("module", "exports", "require", result.outputFiles[0].text)(
    module,
    module.exports,
    createRequire(entry),
  );
  const contents = module.exports.standaloneSource();
  return {
    name: "start-validators",
    setup(bundler) {
      bundler.onLoad({ filter: startValidatorsModule }, () => ({ contents, loader: "js", resolveDir: root }));
    },
  };
}

/** Where a build reads and writes: the workspace (mock-server/) and the repository around it. */
function layout(root = join(dirname(script), "..")) {
  const repo = join(root, "..");
  const dist = join(root, "dist");
  return {
    root,
    repo,
    src: join(root, "src"),
    dist,
    stampFile: join(dist, "build-inputs.json"),
    inspectorSource: join(root, "src/inspector/ui"),
    inspectorOut: join(dist, "inspector"),
    /** Read by every build besides src/ and what the bundles import (the metafile's inputs). */
    settings: [
      script,
      join(repo, "package-lock.json"),
      join(repo, "tsconfig.base.json"),
      join(root, "tsconfig.json"),
      join(root, "package.json"),
    ],
  };
}

/**
 * The fixes of patches/ (applied to dependencies by the install's `postinstall`) that the installed
 * files lack, one line each: every line a patch adds must be in the file it patches. A build of
 * dependencies installed without them (`npm ci --ignore-scripts`) would bundle their old answers.
 */
export function unappliedPatches(repo = layout().repo) {
  const folder = join(repo, "patches");
  let names;
  try {
    names = readdirSync(folder).filter((name) => name.endsWith(".patch"));
  } catch {
    return [];
  }
  const missing = [];
  for (const name of names.sort()) {
    let file = null;
    for (const line of readFileSync(join(folder, name), "utf8").split("\n")) {
      if (line.startsWith("+++ b/")) file = line.slice(6);
      else if (file !== null && line.startsWith("+") && line.slice(1).trim() !== "") {
        let text = "";
        try {
          text = readFileSync(join(repo, file), "utf8");
        } catch {}
        if (!text.includes(line.slice(1))) {
          missing.push(`${file} lacks the fix of patches/${name}`);
          file = null;
        }
      }
    }
  }
  return missing;
}

/** Writes a file so that readers see its old content or its new one, whole. */
function writeWhole(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, path);
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

/** One digest of the files' paths and contents (a missing file counts as missing, not as an error). */
function digest(repo, paths) {
  const hash = createHash("sha1");
  for (const path of [...new Set(paths)].sort()) {
    hash.update(`${relative(repo, path)}\0`);
    try {
      hash.update(readFileSync(path));
    } catch {
      hash.update("\0missing");
    }
    hash.update("\0");
  }
  return hash.digest("hex");
}

const inputPaths = (at, elsewhere) => [...new Set([...at.settings, ...filesUnder(at.src), ...elsewhere])].sort();
const inputsDigest = (at, elsewhere) => digest(at.repo, inputPaths(at, elsewhere));

/** Each input's size and modification time, by its path in the repository ("missing" for none). */
function inputStats(at, paths) {
  return Object.fromEntries(
    paths.map((path) => {
      try {
        const { size, mtimeMs } = statSync(path);
        return [relative(at.repo, path), [size, mtimeMs]];
      } catch {
        return [relative(at.repo, path), "missing"];
      }
    }),
  );
}

/** A file modified this close before its stat was taken may change again within the same tick of the clock. */
const racyMs = 2_000;

/** True when the stamp's sizes and times are those of the inputs now, every one of them old enough to trust. */
function statsUnchanged(at, stamp, paths) {
  const { stats, statsTakenAt } = stamp;
  if (typeof stats !== "object" || stats === null || typeof statsTakenAt !== "number") return false;
  if (Object.keys(stats).length !== paths.length) return false;
  const now = inputStats(at, paths);
  for (const [path, state] of Object.entries(now)) {
    const then = stats[path];
    if (then === undefined || JSON.stringify(then) !== JSON.stringify(state)) return false;
    if (state !== "missing" && state[1] > statsTakenAt - racyMs) return false;
  }
  return true;
}

/** The stamp, with its inputs' sizes and times taken before their contents are read for the digest. */
function stampOf(at, elsewhere, rest) {
  const paths = inputPaths(at, elsewhere);
  const statsTakenAt = Date.now();
  const stats = inputStats(at, paths);
  return { digest: digest(at.repo, paths), ...rest, stats, statsTakenAt };
}

function readStamp(at) {
  try {
    return JSON.parse(readFileSync(at.stampFile, "utf8"));
  } catch {
    return null;
  }
}

const outputState = (path) => {
  const { size, mtimeMs } = statSync(path);
  return { size, mtimeMs };
};

/**
 * Whether the outputs are those of the last build and no input changed since: "unchanged" (by the
 * inputs' sizes and times), "same contents" (a time or size differs, the contents do not) or "changed".
 */
export function bundleState({ root } = {}) {
  const at = layout(root);
  const stamp = readStamp(at);
  if (!stamp || !Array.isArray(stamp.inputs) || typeof stamp.outputs !== "object") return "changed";
  try {
    for (const [path, state] of Object.entries(stamp.outputs)) {
      const now = outputState(join(at.repo, path));
      if (now.size !== state.size || now.mtimeMs !== state.mtimeMs) return "changed";
    }
  } catch {
    return "changed"; // an output is gone
  }
  const elsewhere = stamp.inputs.map((path) => join(at.repo, path));
  if (statsUnchanged(at, stamp, inputPaths(at, elsewhere))) return "unchanged";
  const now = stampOf(at, elsewhere, { inputs: stamp.inputs, outputs: stamp.outputs });
  if (now.digest !== stamp.digest) return "changed";
  // The same contents: keep the new sizes and times, so the next start need not read them (where
  // dist/ can be written: a check must not fail where only reading is allowed).
  try {
    writeWhole(at.stampFile, `${JSON.stringify(now, null, 1)}\n`);
  } catch {
    // The next check reads the contents again.
  }
  return "same contents";
}

/** True when the outputs are those of the last build and no input changed since. */
export const bundleIsFresh = (options = {}) => bundleState(options) !== "changed";

/** esbuild's output, kept in memory, then written file by file with writeWhole; returns its inputs. */
async function bundle(root, options) {
  const { build } = await import("esbuild");
  // (The metafile names its inputs relative to absWorkingDir.)
  const result = await build({ ...options, absWorkingDir: root, write: false, metafile: true });
  for (const file of result.outputFiles) writeWhole(file.path, file.contents);
  return {
    inputs: Object.keys(result.metafile.inputs).map((path) => resolve(root, path)),
    outputs: result.outputFiles.map((file) => file.path),
  };
}

/** Builds dist/ when an input changed since the last build (or always, with `force`); true if it built. */
export async function buildBundle({ force = false, root } = {}) {
  if (!force && bundleIsFresh({ root })) return false;
  try {
    return await buildAll(root);
  } finally {
    // esbuild's service process lives as long as this one unless stopped, and `npm run mock` serves
    // from this one (scripts/run-mock.mjs).
    await (await import("esbuild")).stop();
  }
}

/** Builds every output of dist/ and, when no input changed meanwhile, the stamp; true. */
async function buildAll(root) {
  const at = layout(root);
  const { repo, inspectorSource, inspectorOut } = at;
  const unapplied = unappliedPatches(repo);
  if (unapplied.length > 0)
    throw new Error(`${unapplied.join("; ")}: run \`npm install\` (it applies them; see patches/README.md)`);
  // dist/ writable by its owner only, whatever the umask: the launcher uses a code cache only in
  // such a folder (src/launch.ts).
  mkdirSync(at.dist, { recursive: true });
  try {
    chmodSync(at.dist, 0o755);
  } catch {
    // Another user's folder: the launcher will not use a cache there either.
  }
  const previous = readStamp(at)?.inputs?.map((path) => join(repo, path)) ?? [];
  const before = inputsDigest(at, previous);
  // The emulator, the launcher that runs it (dist/cli.js), and its query worker
  // (src/data/query-workers.ts starts dist/query-worker.js beside the bundle). The emulator is a
  // CommonJS bundle so that the launcher (src/launch.ts) can run it with V8's code cache (node:vm
  // takes cached data for scripts, not for ES modules); it runs strict, as the modules it is built
  // from do, and its import.meta.url is the bundle's own URL.
  const emulator = { inputs: [], outputs: [] };
  const node = { bundle: true, platform: "node", target: "node20", sourcemap: true, external, plugins: [jsonAsParse] };
  const precompiled = await startValidatorsPlugin(at.root);
  for (const options of [
    {
      entryPoints: [join(at.src, "cli.ts")],
      outfile: join(at.dist, "emulator.cjs"),
      format: "cjs",
      plugins: [jsonAsParse, precompiled],
      define: { "import.meta.url": "__bundleUrl" },
      banner: { js: `"use strict";\nvar __bundleUrl = require("node:url").pathToFileURL(__filename).href;` },
    },
    { entryPoints: [join(at.src, "launch.ts")], outfile: join(at.dist, "cli.js"), format: "esm" },
    {
      entryPoints: [join(at.src, "data/query-worker.ts")],
      outfile: join(at.dist, "query-worker.js"),
      format: "esm",
      banner: {
        js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
      },
    },
  ]) {
    const built = await bundle(at.root, { ...node, ...options, logLevel: "warning" });
    emulator.inputs.push(...built.inputs);
    emulator.outputs.push(...built.outputs);
  }
  const inspector = await bundle(at.root, {
    entryPoints: [join(inspectorSource, "main.ts")],
    outfile: join(inspectorOut, "inspector.js"),
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: true,
    logLevel: "warning",
  });
  const copies = [];
  for (const file of ["index.html", "styles.css"]) {
    copies.push(join(inspectorOut, file));
    writeWhole(join(inspectorOut, file), readFileSync(join(inspectorSource, file)));
  }

  const elsewhere = [...emulator.inputs, ...inspector.inputs].filter((path) => relative(at.src, path).startsWith(".."));
  const outputs = Object.fromEntries(
    [...emulator.outputs, ...inspector.outputs, ...copies].map((path) => [relative(repo, path), outputState(path)]),
  );
  const inputs = [...new Set(elsewhere.map((path) => relative(repo, path)))].sort();
  const stamp = stampOf(at, elsewhere, { inputs, outputs });
  // An input changed while this build read them: the outputs may mix both versions, so no stamp
  // (the next start builds again). Checked after the stamp's sizes and times were taken: a change
  // after them shows as a new time.
  if (inputsDigest(at, previous) !== before) return true;
  writeWhole(at.stampFile, `${JSON.stringify(stamp, null, 1)}\n`);
  return true;
}

if (process.argv[1] && resolve(process.argv[1]) === script) {
  await buildBundle({ force: process.argv.includes("--force") });
}
