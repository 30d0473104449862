#!/usr/bin/env node
// A deployment's build carries nothing of the local harness: when the build was given every VITE_
// variable (as web/.env.example asks), none of the harness's default values (src/config/
// harness-defaults.json: the emulator's loopback address, its app id, its EmailJS key, service and
// templates) may appear anywhere in dist/, source maps included. A build given none is the harness's
// own (all the defaults, by design); one given some but not all is a deployment that forgot some —
// its contact form would post to the visitor's own 127.0.0.1:4000 — and fails here, naming them.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadEnv } from "vite";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const harnessDefaults = JSON.parse(readFileSync(join(web, "src/config/harness-defaults.json"), "utf8"));

const env = loadEnv(process.env.BUILD_MODE ?? "production", web, "VITE_");
const embedded = Object.keys(harnessDefaults).filter((name) => !env[name]?.trim());
if (embedded.length === Object.keys(harnessDefaults).length) {
  console.log("A build for the local harness (no VITE_ variable given): its defaults are in it.");
  process.exit(0);
}
if (embedded.length > 0) {
  console.error(
    `check-no-harness-defaults: a build given some VITE_ variables but not these, whose harness values it carries: ${embedded.join(", ")}. Give every variable (web/.env.example), or none for the local harness.`,
  );
  process.exit(1);
}

// The build's folder: web/dist, or the one given (a build made with --outDir elsewhere).
const dist = process.argv[2] ?? join(web, "dist");
const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((f) =>
  /\.(js|html|css|map|json)$/.test(f),
);
const found = [];
for (const file of files) {
  const text = readFileSync(join(dist, file), "utf8");
  for (const [name, value] of Object.entries(harnessDefaults)) {
    if (text.includes(value)) found.push(`${file}: ${name}'s harness value "${value}"`);
  }
}
if (found.length > 0) {
  console.error(
    `check-no-harness-defaults: the build was given every variable, yet carries harness values:\n  ${found.join("\n  ")}`,
  );
  process.exit(1);
}
console.log(`No harness defaults in ${dist} (${files.length} files checked): every variable was given.`);
