/**
 * Exported app folders for the functions' tests: an app of these functions, signed into
 * anonymously, whose functions/node_modules holds installed npm packages (this project's), each
 * copied with what it depends on, as `npm install` in functions/ would leave them.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { scratchDir } from "./scratch.ts";

/** The installed package's folder, found as Node's resolution would from `from`. */
function locate(from: string, name: string): string {
  for (let at = from; ; at = dirname(at)) {
    const candidate = join(at, "node_modules", name);
    if (existsSync(join(candidate, "package.json"))) return realpathSync(candidate);
    if (dirname(at) === at) throw new Error(`${name} is not installed`);
  }
}

/**
 * A new app folder (its path): an app of these functions (name → source), signed into
 * anonymously, with more files (their paths in the folder → their contents).
 */
export function appFolder(
  appId: string,
  functions: Record<string, string>,
  files: Record<string, Uint8Array | string> = {},
): string {
  const dir = scratchDir(`${appId}-`);
  const write = (path: string, data: Uint8Array | string) => {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), data);
  };
  write("realm_config.json", JSON.stringify({ app_id: appId }));
  write(
    "auth/providers.json",
    JSON.stringify({ "anon-user": { name: "anon-user", type: "anon-user", disabled: false } }),
  );
  write("functions/config.json", JSON.stringify(Object.keys(functions).map((name) => ({ name }))));
  for (const [name, source] of Object.entries(functions)) write(`functions/${name}.js`, source);
  for (const [path, data] of Object.entries(files)) write(path, data);
  return dir;
}

/** A new app folder (its path): these functions (name → source), and these packages in functions/node_modules. */
export function appFolderWithPackages(appId: string, functions: Record<string, string>, packages: string[]): string {
  const dir = appFolder(appId, functions);
  const modules = join(dir, "functions", "node_modules");
  const copied = new Set<string>();
  /** The dependencies of the package at `source` (copied to `top`), and of those nested in it, not there already. */
  const dependenciesOf = (source: string, top: string) => {
    const { dependencies = {} } = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
    for (const dependency of Object.keys(dependencies)) {
      // (A dependency nested in a node_modules between the package and the copy's top came with it.)
      let nested = false;
      for (let at = source; !nested && at.startsWith(top); at = dirname(at)) {
        nested = existsSync(join(at, "node_modules", dependency, "package.json"));
      }
      if (!nested) copy(locate(source, dependency));
    }
    const inner = join(source, "node_modules");
    if (!existsSync(inner)) return;
    for (const entry of readdirSync(inner)) {
      const names = entry.startsWith("@") ? readdirSync(join(inner, entry)).map((name) => `${entry}/${name}`) : [entry];
      for (const name of names) {
        if (existsSync(join(inner, name, "package.json"))) dependenciesOf(join(inner, name), top);
      }
    }
  };
  const copy = (source: string) => {
    const { name } = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
    if (copied.has(name)) return;
    copied.add(name);
    cpSync(source, join(modules, name), { recursive: true, dereference: true });
    dependenciesOf(source, source);
  };
  for (const name of packages) copy(locate(import.meta.dirname, name));
  return dir;
}
