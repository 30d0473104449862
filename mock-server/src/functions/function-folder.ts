/**
 * The functions of an App Services app folder (`functions/config.json` + one source file per
 * function), read lazily and reloaded when the folder changes while the emulator runs.
 */
import { existsSync, type FSWatcher, readdirSync, readFileSync, statSync, watch } from "node:fs";
import { join } from "node:path";

export interface FunctionSource {
  name: string;
  source: string;
  private: boolean;
  runAsSystem: boolean;
  /** The rule expression a client's call must satisfy (`can_evaluate`; absent: any call). */
  canEvaluate?: unknown;
  /** An HTTPS endpoint running it runs as this user (`run_as_user_id`). */
  runAsUserId?: string;
  /** An HTTPS endpoint running it runs as the user this source's function names (`run_as_user_id_script_source`). */
  runAsUserIdScriptSource?: string;
  /** Where the source came from (a file path, or `config` for inline functions). */
  origin: string;
  /** Changes whenever the source changes (compiled code is cached by it). */
  version: string;
}

interface ConfigEntry {
  name?: unknown;
  private?: unknown;
  run_as_system?: unknown;
  can_evaluate?: unknown;
  run_as_user_id?: unknown;
  run_as_user_id_script_source?: unknown;
}

export class FunctionFolder {
  private cache: Map<string, FunctionSource> | null = null;
  /** The watched folders, by path: the functions folder, and each of its subfolders but node_modules. */
  private readonly watchers = new Map<string, FSWatcher>();
  private generation = 0;

  constructor(
    readonly dir: string,
    watchForChanges: boolean,
  ) {
    const functionsDir = join(dir, "functions");
    if (!watchForChanges || !existsSync(functionsDir)) return;
    // Not node_modules: a package tree holds thousands of folders (a watch each), and functions load
    // its modules again in their next process anyway.
    this.watchFolder(functionsDir, false, (name) => {
      const sub = name === null ? null : join(functionsDir, name);
      if (sub !== null && name !== "node_modules" && !this.watchers.has(sub) && isFolder(sub))
        this.watchFolder(sub, true);
    });
    for (const entry of readdirSync(functionsDir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== "node_modules") this.watchFolder(join(functionsDir, entry.name), true);
    }
  }

  /** The folders watched for changes (tests). */
  get watched(): string[] {
    return [...this.watchers.keys()];
  }

  private watchFolder(path: string, recursive: boolean, also?: (name: string | null) => void): void {
    try {
      const watcher = watch(path, { recursive, persistent: false }, (_event, name) => {
        this.cache = null;
        this.generation++;
        also?.(typeof name === "string" ? name : null);
      });
      watcher.on("error", () => {
        this.cache = null;
      });
      this.watchers.set(path, watcher);
    } catch {
      // (Unwatched: its changes are seen at the next start.)
    }
  }

  private load(): Map<string, FunctionSource> {
    const functions = new Map<string, FunctionSource>();
    const functionsDir = join(this.dir, "functions");
    const configPath = join(functionsDir, "config.json");
    if (!existsSync(configPath)) return functions;
    let entries: ConfigEntry[];
    try {
      const parsed: unknown = JSON.parse(readFileSync(configPath, "utf8"));
      entries = Array.isArray(parsed) ? (parsed as ConfigEntry[]) : [];
    } catch {
      // A half-written config.json during an edit: keep what we had, retry on the next change.
      return this.cache ?? functions;
    }
    for (const entry of entries) {
      if (typeof entry.name !== "string" || entry.name === "") continue;
      const file = join(functionsDir, `${entry.name}.js`);
      if (!existsSync(file)) continue;
      functions.set(entry.name, {
        name: entry.name,
        source: readFileSync(file, "utf8"),
        private: entry.private === true,
        runAsSystem: entry.run_as_system === true,
        ...(entry.can_evaluate !== undefined ? { canEvaluate: entry.can_evaluate } : {}),
        ...(typeof entry.run_as_user_id === "string" && entry.run_as_user_id !== ""
          ? { runAsUserId: entry.run_as_user_id }
          : {}),
        ...(typeof entry.run_as_user_id_script_source === "string" && entry.run_as_user_id_script_source !== ""
          ? { runAsUserIdScriptSource: entry.run_as_user_id_script_source }
          : {}),
        origin: file,
        version: `${file}#${this.generation}`,
      });
    }
    return functions;
  }

  functions(): Map<string, FunctionSource> {
    if (!this.cache) this.cache = this.load();
    return this.cache;
  }

  close(): void {
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }
}

const isFolder = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

/** The emulator's app folders, one watcher each however many apps share a folder. */
export class FunctionFolders {
  private readonly folders = new Map<string, FunctionFolder>();
  constructor(private readonly watchForChanges: boolean) {}

  get(dir: string): FunctionFolder {
    let folder = this.folders.get(dir);
    if (!folder) {
      folder = new FunctionFolder(dir, this.watchForChanges);
      this.folders.set(dir, folder);
    }
    return folder;
  }

  close(): void {
    for (const folder of this.folders.values()) folder.close();
    this.folders.clear();
  }
}
