// Bundles the emulator and its dependencies into dist/cli.js,
// so it starts as one plain JavaScript file without a TypeScript loader, and the inspector UI into
// dist/inspector/ (one browser bundle, its page and stylesheet), which the emulator serves at /_mock/.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Dependencies are bundled too: one file loads much faster than hundreds of modules (start-up is a
// benchmark target). bson stays external: the function sandbox loads its browser build from disk;
// pg-native is pg's optional native binding, never installed (pg falls back to JavaScript).
const external = ["bson", "pg-native"];

await build({
  entryPoints: [join(root, "src/cli.ts")],
  outfile: join(root, "dist/cli.js"),
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

const inspectorSource = join(root, "src/inspector/ui");
const inspectorOut = join(root, "dist/inspector");
rmSync(inspectorOut, { recursive: true, force: true });
mkdirSync(inspectorOut, { recursive: true });
await build({
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
for (const file of ["index.html", "styles.css"]) copyFileSync(join(inspectorSource, file), join(inspectorOut, file));
