/**
 * The `--config FILE` format (the control document's EmulatorConfigFile): start-up settings, apps
 * (from an app folder and/or config), and EmailJS accounts. Checked against the document's schema;
 * applied all-or-nothing.
 */
import { readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import type { ControlSchemas } from "../openapi/types.ts";
import { AppExistsError } from "../runtime/apps.ts";
import { EmailJsAccountExistsError } from "../runtime/emailjs-accounts.ts";
import type { Emulator } from "../runtime/emulator.ts";
import { appFolderProblem, loadAppFolder } from "./app-folder.ts";
import { startValidator } from "./start-validators.ts";

export type EmulatorConfigFile = ControlSchemas["EmulatorConfigFile"];

/** An app folder a configuration names cannot be loaded (missing, unreadable, not valid). */
export class AppFolderError extends Error {}

export function validateConfigFile(value: unknown, source: string): EmulatorConfigFile {
  const validate = startValidator("configFile");
  if (!validate(value)) {
    const problems = (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ");
    throw new Error(`${source} is not a valid emulator configuration: ${problems}`);
  }
  const repeated = repeatedId(value as EmulatorConfigFile);
  if (repeated) throw new Error(`${source} is not a valid emulator configuration: ${repeated}`);
  return value as EmulatorConfigFile;
}

/** An app or EmailJS account the configuration names twice (which of its settings would hold?), told. */
export function repeatedId(config: EmulatorConfigFile): string | undefined {
  const twice = (ids: (string | undefined)[]) => ids.find((id, i) => id !== undefined && ids.indexOf(id) !== i);
  const app = twice((config.apps ?? []).map((a) => a.appId));
  if (app !== undefined) return `the configuration names the app '${app}' twice`;
  const account = twice((config.emailjsAccounts ?? []).map((a) => a.publicKey));
  if (account !== undefined) return `the configuration names the EmailJS account '${account}' twice`;
  return undefined;
}

export function readConfigFile(path: string): EmulatorConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`Cannot read the configuration ${path}: ${(error as Error).message}`);
  }
  return validateConfigFile(parsed, path);
}

/**
 * Creates the file's apps and EmailJS accounts; nothing is created when any id is taken (taken
 * before, refused before anything is made; taken meanwhile by another request, what this one made
 * is deleted again before the error goes on). At start (`upsert`), apps that exist already (a
 * database, a restart) take the file's settings instead, and EmailJS accounts that exist are kept
 * as they are.
 */
export async function applyConfigFile(
  emulator: Emulator,
  config: EmulatorConfigFile,
  baseDir: string,
  mode: "create" | "upsert" = "upsert",
) {
  const apps = config.apps ?? [];
  const accounts = config.emailjsAccounts ?? [];
  const existingAccounts = new Set<string>();
  for (const account of accounts) {
    if (account.publicKey !== undefined && (await emulator.emailjs.get(account.publicKey)))
      existingAccounts.add(account.publicKey);
  }
  if (mode === "create") {
    for (const app of apps) {
      if (await emulator.apps.get(app.appId)) throw new AppExistsError(`an app with id '${app.appId}' exists`);
    }
    for (const publicKey of existingAccounts)
      throw new EmailJsAccountExistsError(`an EmailJS account with public key '${publicKey}' exists`);
  }
  const templates = apps.map((app) => {
    if (!app.appDir) return undefined;
    const dir = isAbsolute(app.appDir) ? app.appDir : resolve(baseDir, app.appDir);
    const problem = appFolderProblem(dir);
    if (problem) throw new AppFolderError(`App folder ${problem}`);
    try {
      return { config: loadAppFolder(dir).config, appDir: dir };
    } catch (error) {
      throw new AppFolderError((error as Error).message);
    }
  });
  const appIds: string[] = [];
  const emailjsAccounts: string[] = [];
  try {
    for (const [i, app] of apps.entries()) {
      const template = templates[i];
      const options = {
        appId: app.appId,
        ...(template ? { template } : {}),
        ...(app.config ? { overrides: app.config } : {}),
      };
      appIds.push(
        (mode === "upsert" ? await emulator.apps.upsert(options) : await emulator.apps.create(options)).appId,
      );
    }
    for (const account of accounts) {
      if (account.publicKey !== undefined && existingAccounts.has(account.publicKey)) {
        emailjsAccounts.push(account.publicKey);
        continue;
      }
      try {
        emailjsAccounts.push((await emulator.emailjs.create(account)).account.publicKey);
      } catch (error) {
        // At start, another instance on the same database may have created it a moment ago.
        if (!(mode === "upsert" && error instanceof EmailJsAccountExistsError && account.publicKey !== undefined))
          throw error;
        emailjsAccounts.push(account.publicKey);
      }
    }
  } catch (error) {
    // Created here, all of them (an upsert at start changes what exists: a start that fails exits).
    if (mode === "create") {
      for (const appId of appIds) await emulator.apps.delete(appId);
      for (const publicKey of emailjsAccounts) await emulator.emailjs.delete(publicKey);
    }
    throw error;
  }
  return { appIds, emailjsAccounts };
}

export function configBaseDir(path: string): string {
  return dirname(resolve(path));
}
