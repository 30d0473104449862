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
import { type Document, fromEJSON, toEJSON } from "../data/documents.ts";
import { createAjv } from "../http/validation.ts";
import type { ControlSchemas } from "../openapi/types.ts";
import type { AppRuntime } from "./app-runtime.ts";
import type { Emulator } from "./emulator.ts";

export type State = ControlSchemas["State"];
type AppState = ControlSchemas["AppState"];

const stateSchema = (documents["mock-control"].components as { schemas: Record<string, object> }).schemas.State!;
let validateState: ((value: unknown) => boolean) & { errors?: { instancePath: string; message?: string }[] | null };

export class StateImportError extends Error {}

export function exportState(emulator: Emulator): State {
  return {
    format: "app-services-harness-state",
    version: 1,
    exportedAt: new Date().toISOString(),
    signingSecret: emulator.signingSecret,
    apps: emulator.apps.list().map(exportApp),
    emailjsAccounts: emulator.emailjs.list().map((a) => a.exportState()),
    mail: emulator.mail.exportMessages(),
  };
}

function exportApp(app: AppRuntime): AppState {
  return {
    appId: app.appId,
    domainId: app.domainId,
    createdAt: new Date(app.createdAt).toISOString(),
    appDir: app.appDir,
    config: structuredClone(app.config),
    clockOffsetMs: app.clock.offsetMs,
    users: [...app.users.users_()].map((u) => structuredClone(u)),
    userpassAccounts: [...app.users.accounts_()].map((a) => structuredClone(a)),
    sessions: [...app.sessions.all()].map((s) => structuredClone(s)),
    apiKeys: [...app.apiKeys.all()].map((k) => structuredClone(k)),
    authTokens: [...app.authTokens.all()].map((t) => structuredClone(t)),
    collections: app.data.list().map((c) => ({
      database: c.database,
      collection: c.name,
      documents: c.values().map((d) => toEJSON(d) as Document),
    })),
  };
}

/** Replaces the whole state; checks everything first, so a bad import changes nothing. */
export function importState(emulator: Emulator, value: unknown): void {
  validateState ??= createAjv().compile(stateSchema);
  if (!validateState(value)) {
    const problem = validateState.errors?.[0];
    throw new StateImportError(
      `not a state export: ${problem ? `${problem.instancePath || "/"} ${problem.message}` : "invalid"}`,
    );
  }
  const state = value as State;
  const ids = new Set<string>();
  const built = state.apps.map((saved) => {
    if (ids.has(saved.appId)) throw new StateImportError(`the app id '${saved.appId}' appears twice`);
    ids.add(saved.appId);
    const app = emulator.apps.build(
      saved.appId,
      { config: structuredClone(saved.config), appDir: saved.appDir ?? null },
      Date.parse(saved.createdAt),
      saved.clockOffsetMs,
    );
    for (const user of saved.users) app.users.addUser(structuredClone(user));
    for (const account of saved.userpassAccounts) app.users.addAccount(structuredClone(account));
    for (const session of saved.sessions) app.sessions.add(structuredClone(session));
    for (const key of saved.apiKeys) app.apiKeys.add(structuredClone(key));
    for (const token of saved.authTokens) app.authTokens.add(structuredClone(token));
    for (const { database, collection, documents: docs } of saved.collections) {
      const target = app.data.collection(database, collection);
      for (const doc of docs) {
        let decoded: unknown;
        try {
          decoded = fromEJSON(doc);
        } catch (error) {
          throw new StateImportError(
            `a document of ${database}.${collection} is not valid Extended JSON: ${(error as Error).message}`,
          );
        }
        if (!target.insert(decoded as Document))
          throw new StateImportError(`duplicate _id in ${database}.${collection}`);
      }
    }
    return app;
  });
  const publicKeys = new Set<string>();
  for (const account of state.emailjsAccounts) {
    if (publicKeys.has(account.publicKey))
      throw new StateImportError(`the public key '${account.publicKey}' appears twice`);
    publicKeys.add(account.publicKey);
  }
  // Everything checked: swap.
  emulator.apps.clear();
  for (const app of built) emulator.apps.adopt(app);
  emulator.emailjs.clear();
  for (const account of state.emailjsAccounts) emulator.emailjs.restore(account);
  emulator.mail.importMessages(state.mail);
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
  private lastSaved: string | null = null;
  readonly file: string;

  constructor(
    private readonly emulator: Emulator,
    private readonly dir: string,
  ) {
    this.file = join(dir, stateFileName);
  }

  /** Loads the saved state, if any (temporary files of an interrupted save are removed). */
  load(): void {
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
    importState(this.emulator, parsed);
    this.lastSaved = JSON.stringify({ ...exportState(this.emulator), exportedAt: "" });
  }

  /** Saves when the state changed since the last save (the export time aside). */
  save(): boolean {
    const state = exportState(this.emulator);
    const content = JSON.stringify({ ...state, exportedAt: "" });
    if (content === this.lastSaved) return false;
    writeFileAtomic(this.file, `${JSON.stringify(state)}\n`);
    this.lastSaved = content;
    return true;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      try {
        this.save();
      } catch (error) {
        process.stderr.write(`Saving state to ${this.file} failed: ${(error as Error).message}\n`);
      }
    }, intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.save();
  }
}
