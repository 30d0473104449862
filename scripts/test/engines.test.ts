/**
 * package.json's `engines.node` tells the truth: every installed package supports every Node
 * version the range admits (so `npm ci` prints no EBADENGINE warning on any of them), and CI runs
 * the checks on each line the range names.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const read = (path: string) => readFileSync(join(root, path), "utf8");
const supported = (JSON.parse(read("package.json")) as { engines: { node: string } }).engines.node;

describe("package.json's engines", () => {
  it("admits only Node versions every locked package supports", () => {
    const lock = JSON.parse(read("package-lock.json")) as {
      packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
    };
    const narrower = Object.entries(lock.packages)
      .map(([path, entry]) => ({ path, node: Array.isArray(entry.engines) ? undefined : entry.engines?.node }))
      .filter(({ node }) => node !== undefined && !semver.subset(supported, node, { includePrerelease: false }))
      .map(({ path, node }) => `${path.replace(/^.*node_modules\//, "")} wants ${node}`);
    expect(narrower).toEqual([]);
  });

  it("names the lines CI runs the checks on", () => {
    const matrix = /^\s+node: \[([^\]]+)\]/m.exec(read(".github/workflows/ci.yml"))?.[1];
    const lines = matrix?.split(",").map((line) => Number(line.trim())) ?? [];
    expect(lines.length).toBeGreaterThan(1);
    // Every line CI runs is admitted, and so is each line from the oldest to the newest even one
    // (the LTS lines: an admitted one CI skips would be a claim nobody checks).
    for (const line of lines) expect(semver.intersects(supported, `${line}.x`), `Node ${line}`).toBe(true);
    const oldest = Math.min(...lines);
    const newest = Math.max(...lines);
    for (let line = oldest; line <= newest; line += 2) {
      if (semver.intersects(supported, `${line}.x`)) expect(lines, `Node ${line}`).toContain(line);
    }
  });
});
