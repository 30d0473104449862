#!/usr/bin/env node
// The first-load JavaScript budget: the entry chunk of index.html plus every chunk it imports
// statically (transitively), gzip-compressed, must stay under 84 KB (84,000 bytes) — the size of
// the official App Services SDK alone. Lazy route chunks (dynamic imports) do not count.
// Reads Vite's manifest (build.manifest) and fails the build when the budget is exceeded.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const budgetBytes = 84_000;
const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");

let manifest;
try {
  manifest = JSON.parse(readFileSync(join(dist, ".vite", "manifest.json"), "utf8"));
} catch (error) {
  console.error(`check-bundle-size: cannot read dist/.vite/manifest.json (${error.message}); run vite build first.`);
  process.exit(1);
}

const entries = Object.entries(manifest).filter(([, chunk]) => chunk.isEntry);
if (entries.length !== 1) {
  console.error(`check-bundle-size: expected one entry chunk, found ${entries.length}.`);
  process.exit(1);
}

const seen = new Set();
const order = [];
function visit(key) {
  if (seen.has(key)) return;
  seen.add(key);
  const chunk = manifest[key];
  if (!chunk) throw new Error(`check-bundle-size: the manifest has no chunk ${key}`);
  order.push(chunk.file);
  for (const imported of chunk.imports ?? []) visit(imported);
}
visit(entries[0][0]);

const kb = (bytes) => `${(bytes / 1000).toFixed(1)} KB`;
let total = 0;
console.log("First-load JavaScript (entry and its static imports, gzip):");
for (const file of order.filter((f) => f.endsWith(".js"))) {
  const raw = readFileSync(join(dist, file));
  const gzipped = gzipSync(raw).length;
  total += gzipped;
  console.log(`  ${file.padEnd(40)} ${kb(raw.length).padStart(9)} raw  ${kb(gzipped).padStart(9)} gzip`);
}
const verdict = total <= budgetBytes ? "within" : "OVER";
console.log(`  total ${kb(total)} gzip — ${verdict} the budget of ${kb(budgetBytes)}`);
if (total > budgetBytes) process.exit(1);
