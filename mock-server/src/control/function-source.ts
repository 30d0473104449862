/**
 * Function code through the control API. A function's source runs on the host as the emulator's
 * user: the sandbox keeps it from the host's objects, but `node:vm` is not a security boundary
 * (docs/decisions/0010-function-code-on-the-host.md). So the control API takes function code —
 * inline `functions` (create-app, apply-config, state import) and app folders it does not host
 * already (whose `functions/*.js` would run) — only from a caller trusted with the host: when a
 * control token guards it, or when `--allow-function-source` says so; production mode never does.
 * App folders given at start (`--app`, the default app, `--config`) keep working.
 */
import { resolve } from "node:path";
import type { EmulatorOptions } from "../config/options.ts";
import { controlErrors } from "../errors/catalogue.ts";
import type { Emulator } from "../runtime/emulator.ts";

/** What a request would bring: apps with inline functions, and app folders. */
export interface CarriedCode {
  apps: { config?: { functions?: Record<string, unknown> } | undefined; appDir?: string | null | undefined }[];
  /** Where relative app folders are resolved from. */
  baseDir?: string;
}

/** Whether the control API takes function source at all. */
export function functionSourceAccepted(options: EmulatorOptions): boolean {
  return !options.production && (options.controlToken !== null || options.allowFunctionSource);
}

/** Refuses (403 FunctionSourceNotAllowed) a request that carries function code the control API may not take. */
export async function checkFunctionSource(emulator: Emulator, carried: CarriedCode): Promise<void> {
  const { options } = emulator;
  if (functionSourceAccepted(options)) return;
  const refuse = options.production ? controlErrors.functionSourceInProduction : controlErrors.functionSourceOff;
  for (const app of carried.apps) {
    const name = Object.keys(app.config?.functions ?? {})[0];
    if (name !== undefined) throw refuse(`function '${name}'`);
  }
  const dirs = carried.apps.flatMap((app) =>
    app.appDir ? [resolve(carried.baseDir ?? process.cwd(), app.appDir)] : [],
  );
  if (dirs.length === 0) return;
  const hosted = new Set([resolve(options.defaultAppDir), ...options.appDirs.map((dir) => resolve(dir))]);
  for (const app of await emulator.store.apps.list()) if (app.appDir) hosted.add(resolve(app.appDir));
  const unknown = dirs.find((dir) => !hosted.has(dir));
  if (unknown !== undefined) throw refuse(`app folder '${unknown}'`);
}
