// Bundles the emulator and its dependencies into dist/cli.js,
// so it starts as one plain JavaScript file without a TypeScript loader, and the inspector UI into
// dist/inspector/ (one browser bundle, its page and stylesheet), which the emulator serves at /_mock/.
// Every file is written whole under a temporary name and renamed over the old one: an emulator
// started (or a page served) while a build runs — tests and the dev stack build beside running
// emulators — reads the previous file or the new one, never half of one.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Dependencies are bundled too: one file loads much faster than hundreds of modules (start-up is a
// benchmark target). bson stays external: the function sandbox loads its browser build from disk;
// pg-native is pg's optional native binding, never installed (pg falls back to JavaScript); esbuild
// is what bundles the query worker when the emulator runs from its sources, never from the bundle.
const external = ["bson", "pg-native", "esbuild"];

/** Writes a file so that readers see its old content or its new one, whole. */
function writeWhole(path, contents) {
  mkdirSync(dirname(path), { recursive: true });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, contents);
  renameSync(temp, path);
}

/** esbuild's output, kept in memory, then written file by file with writeWhole. */
async function bundle(options) {
  const result = await build({ ...options, write: false });
  for (const file of result.outputFiles) writeWhole(file.path, file.contents);
}

// The emulator, and its query worker (src/data/query-workers.ts starts dist/query-worker.js
// beside dist/cli.js).
for (const [entry, out] of [
  ["src/cli.ts", "dist/cli.js"],
  ["src/data/query-worker.ts", "dist/query-worker.js"],
]) {
  await bundle({
    entryPoints: [join(root, entry)],
    outfile: join(root, out),
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
}

const inspectorSource = join(root, "src/inspector/ui");
const inspectorOut = join(root, "dist/inspector");
await bundle({
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
for (const file of ["index.html", "styles.css"]) {
  writeWhole(join(inspectorOut, file), readFileSync(join(inspectorSource, file)));
}
