#!/usr/bin/env node
// A deployment's build carries nothing of the local harness: when the build was given every VITE_
// variable (as web/.env.example asks), none of the harness's default values (src/config/
// harness-defaults.json: the emulator's loopback address, its app id, its EmailJS key, service and
// templates) may appear anywhere in dist/, source maps included. A build given fewer variables embeds
// the defaults of the missing ones by design, and this says which.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadEnv } from "vite";

const web = join(dirname(fileURLToPath(import.meta.url)), "..");
const harnessDefaults = JSON.parse(readFileSync(join(web, "src/config/harness-defaults.json"), "utf8"));

const env = loadEnv(process.env.BUILD_MODE ?? "production", web, "VITE_");
const embedded = Object.keys(harnessDefaults).filter((name) => !env[name]?.trim());
if (embedded.length > 0) {
  console.log(`Harness defaults in this build (variables not given): ${embedded.join(", ")}.`);
  process.exit(0);
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
