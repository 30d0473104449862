// Where the time goes in a V8 CPU profile (`node --cpu-prof`): self time per function and per
// source area, as text for docs/benchmarks.md. The emulator runs as one bundle, so frames of
// dist/emulator.cjs are mapped back to their source file (emulator source or package) with the bundle's
// source map.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const base64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** Decodes a source map's mappings into, per generated line, sorted [column, sourceIndex, line] triples. */
function decodeMappings(mappings) {
  const lines = [];
  let source = 0;
  let originalLine = 0;
  for (const lineText of mappings.split(";")) {
    const segments = [];
    let column = 0;
    for (const segment of lineText.split(",")) {
      if (segment === "") continue;
      const values = [];
      let value = 0;
      let shift = 0;
      for (const char of segment) {
        const digit = base64.indexOf(char);
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      column += values[0];
      if (values.length >= 4) {
        source += values[1];
        originalLine += values[2];
        segments.push([column, source, originalLine]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

function sourceMapFor(url) {
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (!existsSync(`${path}.map`)) return null;
  const map = JSON.parse(readFileSync(`${path}.map`, "utf8"));
  const lines = decodeMappings(map.mappings);
  return (line, column) => {
    const segments = lines[line];
    if (!segments || segments.length === 0) return null;
    let found = segments[0];
    for (const s of segments) {
      if (s[0] > column) break;
      found = s;
    }
    return { source: map.sources[found[1]], line: found[2] + 1 };
  };
}

/** The emulator's bundle: dist/emulator.cjs (run by dist/cli.js), or an older build's dist/cli.js. */
const isBundle = (url) => /\/dist[^/]*\/(emulator\.cjs|cli\.js)$/.test(url ?? "");

function areaOf(source) {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source)?.[1];
  if (pkg) return `package ${pkg}`;
  const src = /(?:^|\/)((?:mock-server\/)?src\/[^/]+(?:\/[^/]+)?)/.exec(source)?.[1];
  return src ?? source;
}

/**
 * `window`: only the samples taken between these two times (µs of the monotonic clock, which V8's
 * profiles and `process.hrtime` share on Linux): the measured run, without start-up or seeding.
 */
export function summarizeProfile(dir, top = 30, window = null) {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  const out = [];
  const maps = new Map();
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), "utf8"));
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const counts = new Map();
    let at = profile.startTime;
    let total = 0;
    for (const [i, id] of profile.samples.entries()) {
      at += profile.timeDeltas[i] ?? 0;
      if (window && (at < window[0] || at > window[1])) continue;
      counts.set(id, (counts.get(id) ?? 0) + 1);
      total++;
    }
    const self = new Map();
    const areas = new Map();
    const keyOf = new Map();
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber, columnNumber } = node.callFrame;
      const name = functionName || "(anonymous)";
      let where = url;
      if (isBundle(url)) {
        if (!maps.has(url)) maps.set(url, sourceMapFor(url));
        const original = maps.get(url)?.(lineNumber, columnNumber);
        if (original) where = `${original.source.replace(/^(\.\.\/)+/, "")}:${original.line}`;
      } else if (url) where = `${url}:${lineNumber + 1}`;
      keyOf.set(node.id, `${name}${where ? `  ${where}` : ""}`);
    }
    for (const [id, n] of counts) {
      const { functionName, url, lineNumber, columnNumber } = byId.get(id).callFrame;
      const name = functionName || "(anonymous)";
      let where = url;
      let area = url ? url : name.startsWith("(") ? name : "(native)";
      if (isBundle(url)) {
        if (!maps.has(url)) maps.set(url, sourceMapFor(url));
        const original = maps.get(url)?.(lineNumber, columnNumber);
        if (original) {
          where = `${original.source.replace(/^(\.\.\/)+/, "")}:${original.line}`;
          area = areaOf(original.source);
        }
      } else if (url) {
        where = `${url}:${lineNumber + 1}`;
        area = url.startsWith("node:") ? url : areaOf(url);
      }
      const key = `${name}${where ? `  ${where}` : ""}`;
      self.set(key, (self.get(key) ?? 0) + n);
      areas.set(area, (areas.get(area) ?? 0) + n);
    }
    // Inclusive time per function (a function's samples and its callees'; recursion counted once).
    const inclusive = new Map();
    const parentOf = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
    for (const [id, n] of counts) {
      const seen = new Set();
      for (let at = id; at !== undefined; at = parentOf.get(at)) {
        const key = keyOf.get(at);
        if (key === undefined || seen.has(key)) continue;
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + n);
      }
    }
    const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)} %`;
    out.push(`${file}: ${total} samples`);
    out.push("self time by function:");
    for (const [key, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`  ${pct(n)}  ${key}`);
    out.push("inclusive time by function:");
    for (const [key, n] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`  ${pct(n)}  ${key}`);
    out.push("self time by area:");
    for (const [key, n] of [...areas].sort((a, b) => b[1] - a[1]).slice(0, 20)) out.push(`  ${pct(n)}  ${key}`);
  }
  return out.join("\n");
}
