#!/usr/bin/env node
/**
 * dist/cli.js: runs the emulator's bundle (dist/emulator.cjs, built from cli.ts) with V8's code
 * cache, so that a start does not compile the 5 MB bundle again.
 *
 * Most of a start was compiling: V8 parses the bundle whole, then compiles each function the first
 * time it runs (the dependencies' module bodies, Fastify's routes, the first request's path). A run
 * without a usable cache writes, once it has run for a while (`writeAfterMs`: started, listening,
 * usually its first requests answered), V8's code for everything compiled so far; later runs hand
 * it to V8 and skip that work. The cache is made after running rather than right after compiling
 * (as require hooks such as v8-compile-cache make theirs) because a bundle's code is almost all in
 * functions compiled lazily, which a cache taken before they run does not hold.
 *
 * The cache file is 4 bytes of the bundle's CRC-32, then V8's data. V8 checks its own version and
 * flags (a cache of another Node is rejected) but of the source only its length, so the CRC keeps a
 * cache of another build of the same length out. A cache that is missing, of another bundle or
 * rejected is written again (whole, under a temporary name, then renamed: emulators starting side
 * by side read an old cache or a new one). Nothing here may stop the emulator: a cache that cannot
 * be read or written is only a slower start. What the cache holds is code V8 runs, so one that
 * another user could have written or put there is neither used nor written (see `unsafe`).
 *
 *   MOCK_CODE_CACHE=FILE   where the cache lives (default: dist/emulator.cjs.cache, beside the bundle;
 *                          set it where dist/ cannot be written, e.g. a read-only image)
 *   MOCK_CODE_CACHE=off    neither read nor written
 *   NODE_DEBUG=code-cache  what the launcher did, on stderr
 *
 * With --enable-source-maps the bundle is loaded as a module instead, without the cache: Node maps
 * the stack frames of what its loaders load to the sources, not those of node:vm scripts.
 */
import {
  chmodSync,
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
} from "node:fs";
import Module, { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { debuglog } from "node:util";
import vm from "node:vm";
import { crc32 } from "node:zlib";

/** How long a run lives before it writes the cache it did not find. */
const writeAfterMs = 2_000;

const log = debuglog("code-cache");
const bundle = fileURLToPath(new URL("./emulator.cjs", import.meta.url));
if (process.sourceMapsEnabled) {
  log("source maps are on: the bundle is loaded as a module, without the cache");
  createRequire(import.meta.url)(bundle);
} else {
  const setting = process.env.MOCK_CODE_CACHE;
  runWithCache(setting === "off" ? null : setting || `${bundle}.cache`);
}

/** Runs the bundle with the cache in `cacheFile` (none: neither read nor written). */
function runWithCache(cacheFile: string | null): void {
  const bytes = readFileSync(bundle);
  const key = crc32(bytes);
  // The bundle's first line is cli.ts's `#!`, which V8 takes only at the very start of a script: a
  // comment of the same length in its place keeps every line and column.
  const text = bytes.toString("utf8");
  const source = text.startsWith("#!") ? `//${text.slice(2)}` : text;

  if (!cacheFile) log("turned off");
  const cachedData = cacheFile ? readCache(cacheFile, key) : undefined;
  const script = new vm.Script(Module.wrap(source), {
    filename: bundle,
    cachedData,
    // The bundle's import() (of esbuild, when the emulator runs from its sources) resolves as it would
    // in a module Node loaded itself.
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cachedData && script.cachedDataRejected) log("the cache at %s was rejected by V8", cacheFile);
  else if (cachedData) log("used %d bytes from %s", cachedData.length, cacheFile);
  if (cacheFile && (!cachedData || script.cachedDataRejected)) {
    setTimeout(() => writeCache(cacheFile, key, script.createCachedData()), writeAfterMs).unref();
  }

  // As Node runs a CommonJS module: its own module object, and a require that resolves from dist/.
  const module = new Module(bundle);
  module.filename = bundle;
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
}

/**
 * Why a cache would not be safe to run, if it would not (`stats`: the file's, when there is one): V8
 * runs what the file holds, so it must be written by nobody but this process's user (or root), in a
 * folder where nobody else can put another file in its place: the user's or root's, and not group-
 * or world-writable unless only owners may rename there (the sticky bit, as /tmp). As ssh checks its
 * key files.
 */
function unsafe(stats: Stats | null, folder: Stats): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined; // no owners to check on this system
  const trusted = (owner: number) => owner === uid || owner === 0;
  if (!trusted(folder.uid)) return "is in a folder of another user";
  if (folder.mode & 0o022 && !(folder.mode & 0o1000)) return "is in a folder others can write";
  if (stats && !trusted(stats.uid)) return "belongs to another user";
  if (stats && stats.mode & 0o022) return "can be written by others";
  return undefined;
}

/** The cached V8 data in `file` if it was made for the bundle whose CRC-32 is `key`, and is safe. */
function readCache(file: string, key: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    log("no cache at %s", file);
    return undefined;
  }
  try {
    const problem = unsafe(fstatSync(fd), statSync(dirname(file)));
    if (problem) {
      log("the cache at %s %s: not used", file, problem);
      return undefined;
    }
    const data = readFileSync(fd);
    if (data.length < 4 || data.readUInt32LE(0) !== key) {
      log("the cache at %s was made for another bundle", file);
      return undefined;
    }
    return data.subarray(4);
  } catch (error) {
    log("the cache at %s could not be read: %s", file, (error as Error).message);
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes the cache whole: under a temporary name, then renamed over the old one; readable by all,
 * writable by its owner only. Not into a folder where others could replace it.
 */
function writeCache(file: string, key: number, data: Buffer): void {
  const header = Buffer.alloc(4);
  header.writeUInt32LE(key, 0);
  const temporary = `${file}.${process.pid}.tmp`;
  try {
    const problem = unsafe(null, statSync(dirname(file)));
    if (problem) throw new Error(problem);
    writeFileSync(temporary, Buffer.concat([header, data]), { mode: 0o644 });
    chmodSync(temporary, 0o644); // whatever the umask left
    renameSync(temporary, file);
    log("written (%d bytes) to %s", data.length, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    log("not written to %s: %s", file, (error as Error).message);
  }
}
