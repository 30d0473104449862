/**
 * An app's uploaded dependencies (the reference: "Upload a Dependency Directory"): an export's
 * `functions/node_modules.tar.gz` (or `.tgz`, `.tar`, `.zip`, at most 15 MB) holding its
 * `node_modules`. Without a `functions/node_modules`, the archive is unpacked — once per archive
 * contents, into a folder of this process's own (removed when it exits, or by the next process
 * that unpacks one if it was killed), never into the app folder — and its packages are what the
 * app's functions require (docs/decisions/0038).
 *
 * Only files and folders are unpacked: no links, nothing outside the folder (node-tar's own
 * rules, and the same for zip entries), within the limits below checked before anything is
 * written; an archive past them, or broken, is named at start (`notRun`) and not used.
 */
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, normalize, sep } from "node:path";
import { unzipSync } from "fflate";
import { extract as extractTar, list as listTar } from "tar";

/** The archive names the service takes, in the order they are looked for. */
export const moduleArchiveNames = ["node_modules.tar.gz", "node_modules.tgz", "node_modules.tar", "node_modules.zip"];

/** The service's limit on the archive (15 MB), and this server's on what it unpacks. */
export const moduleArchiveLimits = {
  archiveBytes: 15 * 1024 * 1024,
  unpackedBytes: 512 * 1024 * 1024,
  entries: 200_000,
};

/** An archive this server does not unpack, and why. */
export class ModuleArchiveError extends Error {}

/** Archives unpacked by this process: by their contents' digest, the unpacked node_modules. */
const unpacked = new Map<string, string>();
/** The digest of each archive read, by path, size and modification time. */
const digests = new Map<string, string>();
const folders: string[] = [];

/** The app's uploaded archive (in its functions folder), if it has one. */
export function moduleArchiveOf(functionsDir: string): string | null {
  for (const name of moduleArchiveNames) {
    const path = join(functionsDir, name);
    if (existsSync(path)) return path;
  }
  return null;
}

/**
 * The folder of the packages an app's functions require: its functions/node_modules, or its
 * uploaded archive unpacked; null when it has neither. Throws ModuleArchiveError for an archive
 * it does not unpack.
 */
export function functionModules(functionsDir: string): string | null {
  const installed = join(functionsDir, "node_modules");
  if (existsSync(installed)) return realpathSync(installed);
  const archive = moduleArchiveOf(functionsDir);
  return archive === null ? null : unpack(archive);
}

const folderPrefix = "app-services-modules-";

/**
 * Removes the unpacked folders of this user's processes that are gone (killed before they could
 * remove their own): each folder is named after its process.
 */
function sweepStale(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = name.startsWith(folderPrefix) ? Number.parseInt(name.slice(folderPrefix.length), 10) : Number.NaN;
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      process.kill(pid, 0);
      continue; // (Still running.)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") continue;
    }
    const dir = join(tmpdir(), name);
    try {
      if (statSync(dir).uid === process.getuid?.()) rmSync(dir, { recursive: true, force: true });
    } catch {
      // (Gone already, or not ours.)
    }
  }
}

/** An archive as messages name it. */
const shown = (archive: string) => `functions/${basename(archive)}`;

function unpack(archive: string): string {
  const { size, mtimeMs } = statSync(archive);
  if (size > moduleArchiveLimits.archiveBytes) {
    throw new ModuleArchiveError(`${shown(archive)} is larger than the service's 15 MB for uploaded dependencies`);
  }
  const stamp = `${archive}\0${size}\0${mtimeMs}`;
  let digest = digests.get(stamp);
  if (digest === undefined) {
    digest = createHash("sha256").update(readFileSync(archive)).digest("hex");
    digests.set(stamp, digest);
  }
  const known = unpacked.get(digest);
  if (known !== undefined && existsSync(known)) return known;
  sweepStale();
  const root = mkdtempSync(join(tmpdir(), `${folderPrefix}${process.pid}-`));
  if (folders.length === 0)
    process.once("exit", () => {
      for (const dir of folders) rmSync(dir, { recursive: true, force: true });
    });
  folders.push(root);
  try {
    if (archive.endsWith(".zip")) unzipInto(archive, root);
    else untarInto(archive, root);
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    if (error instanceof ModuleArchiveError) throw error;
    throw new ModuleArchiveError(`${shown(archive)} could not be unpacked: ${(error as Error).message}`);
  }
  // (An archive of the node_modules folder, as the reference makes it; or of its packages alone.)
  const modules = existsSync(join(root, "node_modules")) ? join(root, "node_modules") : root;
  const real = realpathSync(modules);
  unpacked.set(digest, real);
  return real;
}

/** Counts an entry against the limits. */
function counter(archive: string) {
  let entries = 0;
  let bytes = 0;
  return (size: number) => {
    entries++;
    bytes += size;
    if (entries > moduleArchiveLimits.entries || bytes > moduleArchiveLimits.unpackedBytes) {
      throw new ModuleArchiveError(
        `${shown(archive)} holds more than ${moduleArchiveLimits.entries} entries or ${moduleArchiveLimits.unpackedBytes / 1024 / 1024} MiB unpacked`,
      );
    }
  };
}

/** Files and folders only (no links, devices or the like), by node-tar, whose paths stay in `root`. */
function untarInto(archive: string, root: string): void {
  const count = counter(archive);
  listTar({ file: archive, sync: true, strict: true, onReadEntry: (entry) => count(entry.size ?? 0) });
  extractTar({
    file: archive,
    cwd: root,
    sync: true,
    strict: true,
    preserveOwner: false,
    filter: (_path, entry) => {
      const type = (entry as { type?: string }).type;
      return type === "File" || type === "OldFile" || type === "ContiguousFile" || type === "Directory";
    },
  });
}

/** The zip's files (its folders made as they are needed), by fflate, each path checked to stay in `root`. */
function unzipInto(archive: string, root: string): void {
  const count = counter(archive);
  const files = unzipSync(new Uint8Array(readFileSync(archive)), {
    filter: (file) => {
      count(file.originalSize);
      return true;
    },
  });
  for (const [name, bytes] of Object.entries(files)) {
    const path = normalize(name);
    if (isAbsolute(path) || path === ".." || path.startsWith(`..${sep}`) || name.includes("\\")) {
      throw new ModuleArchiveError(`${shown(archive)} names a file outside its folder: ${JSON.stringify(name)}`);
    }
    const target = join(root, path);
    if (name.endsWith("/")) {
      mkdirSync(target, { recursive: true });
      continue;
    }
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, bytes);
  }
}
