// Bundles the emulator and its dependencies into dist/cli.js,
// so it starts as one plain JavaScript file without a TypeScript loader, and the inspector UI into
// dist/inspector/ (one browser bundle, its page and stylesheet), which the emulator serves at /_mock/.
//
// `node scripts/build.mjs [--force]` builds only when an input changed since the last build (a
// start of `npm run mock` or `npm start` then costs a few tens of milliseconds here, not a build):
// dist/build-inputs.json keeps a digest of the inputs' contents — every file under src/ (an added
// or deleted one included), each file the bundles read from elsewhere (the documents, the
// dependencies), the lockfile, the TypeScript settings and this script — and the size and time of
// each output, so a changed or missing output is built again too.
//
// Every file is written whole under a temporary name and renamed over the old one: an emulator
// started (or a page served) while a build runs — tests and the dev stack build beside running
// emulators — reads the previous file or the new one, never half of one.
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const script = fileURLToPath(import.meta.url);
// Dependencies are bundled too: one file loads much faster than hundreds of modules (start-up is a
// benchmark target). bson stays external: the function sandbox loads its browser build from disk;
// pg-native is pg's optional native binding, never installed (pg falls back to JavaScript); esbuild
// is what bundles the query worker when the emulator runs from its sources, never from the bundle.
const external = ["bson", "pg-native", "esbuild"];

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

const inputsDigest = (at, elsewhere) => digest(at.repo, [...at.settings, ...filesUnder(at.src), ...elsewhere]);

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

/** True when the outputs are those of the last build and no input changed since. */
export function bundleIsFresh({ root } = {}) {
  const at = layout(root);
  const stamp = readStamp(at);
  if (!stamp || !Array.isArray(stamp.inputs) || typeof stamp.outputs !== "object") return false;
  try {
    for (const [path, state] of Object.entries(stamp.outputs)) {
      const now = outputState(join(at.repo, path));
      if (now.size !== state.size || now.mtimeMs !== state.mtimeMs) return false;
    }
  } catch {
    return false; // an output is gone
  }
  return (
    stamp.digest ===
    inputsDigest(
      at,
      stamp.inputs.map((path) => join(at.repo, path)),
    )
  );
}

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
  const at = layout(root);
  const { repo, inspectorSource, inspectorOut } = at;
  const previous = readStamp(at)?.inputs?.map((path) => join(repo, path)) ?? [];
  const before = inputsDigest(at, previous);
  // The emulator, and its query worker (src/data/query-workers.ts starts dist/query-worker.js
  // beside dist/cli.js).
  const emulator = { inputs: [], outputs: [] };
  for (const [entry, out] of [
    ["cli.ts", "cli.js"],
    ["data/query-worker.ts", "query-worker.js"],
  ]) {
    const built = await bundle(at.root, {
      entryPoints: [join(at.src, entry)],
      outfile: join(at.dist, out),
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      sourcemap: true,
      external,
      banner: {
        js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
      },
      logLevel: "warning",
    });
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

  // An input changed while this build read them: the outputs may mix both versions, so no stamp
  // (the next start builds again).
  if (inputsDigest(at, previous) !== before) return true;
  const elsewhere = [...emulator.inputs, ...inspector.inputs].filter((path) => relative(at.src, path).startsWith(".."));
  const outputs = Object.fromEntries(
    [...emulator.outputs, ...inspector.outputs, ...copies].map((path) => [relative(repo, path), outputState(path)]),
  );
  const inputs = [...new Set(elsewhere.map((path) => relative(repo, path)))].sort();
  writeWhole(at.stampFile, `${JSON.stringify({ digest: inputsDigest(at, elsewhere), inputs, outputs }, null, 1)}\n`);
  return true;
}

if (process.argv[1] && resolve(process.argv[1]) === script) {
  await buildBundle({ force: process.argv.includes("--force") });
}
