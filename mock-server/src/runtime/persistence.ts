/**
 * Whole-state export and import (the control document's State), and `--data-dir` persistence:
 * loaded at start, saved periodically (when it changed) and at shutdown, always by writing a
 * temporary file, syncing it and renaming it over the previous one, so a crash at any moment
 * leaves either the old or the new state on disk, never a torn file.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { documents } from "@harness/openapi/documents";
import { createAjv } from "../http/validation.ts";
import { StateImportError } from "../store/state-import.ts";
import type { State } from "../store/store.ts";
import type { Emulator } from "./emulator.ts";

export type { State };
export { StateImportError };

const stateSchema = (documents["mock-control"].components as { schemas: Record<string, object> }).schemas.State!;
let validateState: ((value: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

/** Everything: the store's records with this instance's clocks and the signing secret. */
export async function exportState(emulator: Emulator): Promise<State> {
  const stored = await emulator.store.exportState();
  return {
    format: "app-services-harness-state",
    version: 1,
    exportedAt: new Date().toISOString(),
    signingSecret: emulator.signingSecret,
    apps: stored.apps.map((app) => ({ ...app, clockOffsetMs: emulator.apps.clockOffsetOf(app.appId) })),
    emailjsAccounts: stored.emailjsAccounts.map((account) => ({
      ...account,
      clockOffsetMs: emulator.emailjs.cachedClockOffset(account.publicKey),
    })),
    mail: stored.mail,
  };
}

/** Replaces the whole state; checks everything first, so a bad import changes nothing. */
export async function importState(emulator: Emulator, value: unknown): Promise<void> {
  validateState ??= createAjv().compile(stateSchema);
  if (!validateState(value)) {
    const problem = validateState.errors?.[0];
    throw new StateImportError(
      `not a state export: ${problem ? `${problem.instancePath || "/"} ${problem.message}` : "invalid"}`,
    );
  }
  const state = value as State;
  await emulator.store.importState(state);
  emulator.apps.setClockOffsets(new Map(state.apps.map((app) => [app.appId, app.clockOffsetMs])));
  emulator.emailjs.setClockOffsets(new Map(state.emailjsAccounts.map((a) => [a.publicKey, a.clockOffsetMs])));
  emulator.setSigningSecret(state.signingSecret);
}

export const stateFileName = "state.json";

/** Writes a file so that readers see either its old or its new content, whatever happens. */
export function writeFileAtomic(path: string, content: string): void {
  const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, path);
  const dir = openSync(join(path, ".."), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

export class StatePersistence {
  private timer: NodeJS.Timeout | null = null;
  private saving: Promise<boolean> | null = null;
  private lastSaved: string | null = null;
  readonly file: string;

  constructor(
    private readonly emulator: Emulator,
    private readonly dir: string,
  ) {
    this.file = join(dir, stateFileName);
  }

  /** Loads the saved state, if any (temporary files of an interrupted save are removed). */
  async load(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    for (const name of readdirSync(this.dir)) {
      if (name.startsWith(`${stateFileName}.`) && name.endsWith(".tmp")) rmSync(join(this.dir, name), { force: true });
    }
    if (!existsSync(this.file)) return;
    const text = readFileSync(this.file, "utf8");
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new Error(`${this.file} is not valid JSON: ${(error as Error).message}`);
    }
    await importState(this.emulator, parsed);
    this.lastSaved = JSON.stringify({ ...(await exportState(this.emulator)), exportedAt: "" });
  }

  /** Saves when the state changed since the last save (the export time aside). */
  async save(): Promise<boolean> {
    const state = await exportState(this.emulator);
    const content = JSON.stringify({ ...state, exportedAt: "" });
    if (content === this.lastSaved) return false;
    writeFileAtomic(this.file, `${JSON.stringify(state)}\n`);
    this.lastSaved = content;
    return true;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      // A save still running (a large state) is not started again.
      if (this.saving) return;
      this.saving = this.save();
      this.saving
        .catch((error: unknown) => {
          process.stderr.write(`Saving state to ${this.file} failed: ${(error as Error).message}\n`);
          return false;
        })
        .finally(() => {
          this.saving = null;
        });
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.saving?.catch(() => false);
    await this.save();
  }
}
