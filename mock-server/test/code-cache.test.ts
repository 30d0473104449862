/**
 * dist/cli.js runs the bundle with V8's code cache (src/launch.ts): the first run that lives long
 * enough writes what V8 compiled, later runs take it instead of compiling the bundle again, and a
 * cache of another bundle (or another Node) is never used. What the launcher did is read from its
 * debug lines (NODE_DEBUG=code-cache); the cache lives where MOCK_CODE_CACHE says, so that this file
 * shares nothing with other emulators started from the same bundle.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, killAll, startEmulatorProcess } from "./helpers/emulator-process.ts";
import { until } from "./helpers/until.ts";

let dir: string;
/** A cache a first run wrote, and that run's debug lines. */
let written: { file: string; lines: string[] };
beforeAll(async () => {
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), "code-cache-"));
  const file = join(dir, "first.cache");
  const first = await start(file);
  await waitFor(first.lines, /^CODE-CACHE \d+: written \(\d+ bytes\) to /);
  await first.emulator.stop();
  written = { file, lines: first.lines() };
}, 60_000);
afterAll(() => {
  killAll();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the bundle with the cache at `cache`, and returns its launcher's debug lines as they come. */
async function start(cache: string) {
  const emulator = await startEmulatorProcess([], { MOCK_CODE_CACHE: cache, NODE_DEBUG: "code-cache" });
  const lines = () => emulator.stderr().match(/^CODE-CACHE \d+: .*$/gm) ?? [];
  return { emulator, lines };
}

const waitFor = (lines: () => string[], pattern: RegExp) =>
  until(() => lines().find((line) => pattern.test(line)), `a debug line matching ${pattern}`, { timeoutMs: 15_000 });

describe("the launcher's code cache", () => {
  it("is written by a first run, used by the next, and answers the same", async () => {
    expect(written.lines[0]).toMatch(/no cache at /);
    expect(statSync(written.file).size).toBeGreaterThan(100_000);

    const second = await start(written.file);
    await waitFor(second.lines, /used \d+ bytes from /);
    const location = await fetch(`${second.emulator.url}/api/client/v2.0/app/local-app/location`);
    expect(location.status).toBe(200);
    // A cache that was used is not written again.
    await fetch(`${second.emulator.url}/_mock/v1/health`);
    await second.emulator.stop();
    expect(second.lines().some((line) => line.includes("written"))).toBe(false);
  }, 60_000);

  it("does not use a cache of another bundle, and replaces it", async () => {
    const cache = join(dir, "other.cache");
    // The same V8 data under another bundle's key: V8 itself would take it (it checks only the
    // source's length), so the key is what keeps it out.
    const stale = readFileSync(written.file);
    stale.writeUInt32LE((stale.readUInt32LE(0) + 1) >>> 0, 0);
    writeFileSync(cache, stale);

    const second = await start(cache);
    await waitFor(second.lines, /made for another bundle/);
    await waitFor(second.lines, /written \(\d+ bytes\)/);
    await second.emulator.stop();
    expect(readFileSync(cache).readUInt32LE(0)).toBe((stale.readUInt32LE(0) - 1) >>> 0);
  }, 60_000);

  it("does not use a cache V8 rejects (another Node or V8 flags), and replaces it", async () => {
    const cache = join(dir, "garbled.cache");
    const garbled = readFileSync(written.file);
    garbled.fill(0, 4, 64); // the key kept, V8's header gone
    writeFileSync(cache, garbled);

    const second = await start(cache);
    await waitFor(second.lines, /rejected by V8/);
    await waitFor(second.lines, /written \(\d+ bytes\)/);
    await second.emulator.stop();
    expect(
      readFileSync(cache)
        .subarray(4, 64)
        .some((byte) => byte !== 0),
    ).toBe(true);
  }, 60_000);

  // The cache is code V8 runs: whoever can write it can run code as the emulator. A cache another
  // user could have written is not used (as ssh refuses a key file others can write).
  it("does not use a cache that others can write, or one in a folder where others can replace it", async () => {
    const writable = join(dir, "writable.cache");
    writeFileSync(writable, readFileSync(written.file));
    chmodSync(writable, 0o666);
    const first = await start(writable);
    await waitFor(first.lines, /the cache at .* can be written by others: not used/);
    await waitFor(first.lines, /written \(\d+ bytes\)/);
    await first.emulator.stop();
    expect(statSync(writable).mode & 0o777).toBe(0o644);

    const open = join(dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    const inOpen = join(open, "emulator.cache");
    writeFileSync(inOpen, readFileSync(written.file));
    const second = await start(inOpen);
    await waitFor(second.lines, /the cache at .* is in a folder others can write: not used/);
    // Nor is one written there.
    await waitFor(second.lines, /not written to .*: is in a folder others can write/);
    await second.emulator.stop();

    // A folder others can write but only owners can rename in (the sticky bit, as /tmp) is safe.
    chmodSync(open, 0o1777);
    const third = await start(inOpen);
    await waitFor(third.lines, /used \d+ bytes from /);
    await third.emulator.stop();
  }, 60_000);

  // Run as root, these change owners; root's own files count as the user's (only root writes them).
  it.skipIf(process.getuid?.() !== 0)(
    "does not use a cache of another owner, or in another's folder",
    async () => {
      const foreign = join(dir, "foreign.cache");
      writeFileSync(foreign, readFileSync(written.file));
      chownSync(foreign, 12345, 12345);
      const run = await start(foreign);
      await waitFor(run.lines, /the cache at .* belongs to another user: not used/);
      await run.emulator.stop();

      const theirs = join(dir, "theirs");
      mkdirSync(theirs, { mode: 0o755 });
      const inTheirs = join(theirs, "emulator.cache");
      writeFileSync(inTheirs, readFileSync(written.file));
      chownSync(theirs, 12345, 12345);
      const other = await start(inTheirs);
      await waitFor(other.lines, /the cache at .* is in a folder of another user: not used/);
      await other.emulator.stop();
    },
    60_000,
  );

  it("keeps serving when the cache cannot be written", async () => {
    const cache = join(dir, "a-directory.cache");
    mkdirSync(join(cache, "inside"), { recursive: true });
    const run = await start(cache);
    await waitFor(run.lines, /the cache at .* could not be read: /);
    await waitFor(run.lines, /not written to .*: /);
    const health = await fetch(`${run.emulator.url}/_mock/v1/health`);
    expect(health.status).toBe(200);
    await run.emulator.stop();
    expect(await run.emulator.exited).toBe(0);
  }, 60_000);

  it("steps aside when source maps are on, so that stack traces name the sources", async () => {
    // Node maps the frames of modules its loaders load, not of node:vm scripts.
    const emulator = await startEmulatorProcess([], {
      MOCK_CODE_CACHE: join(dir, "source-maps.cache"),
      NODE_DEBUG: "code-cache",
      NODE_OPTIONS: "--enable-source-maps",
    });
    const lines = () => emulator.stderr().match(/^CODE-CACHE \d+: .*$/gm) ?? [];
    await waitFor(lines, /source maps are on: the bundle is loaded as a module, without the cache/);
    expect((await fetch(`${emulator.url}/_mock/v1/health`)).status).toBe(200);
    await emulator.stop();
    expect(lines()).toHaveLength(1);
  }, 60_000);

  it("is neither read nor written when turned off", async () => {
    const run = await start("off");
    await waitFor(run.lines, /turned off/);
    await fetch(`${run.emulator.url}/_mock/v1/health`);
    await run.emulator.stop();
    expect(run.lines()).toHaveLength(1);
  }, 60_000);
});
