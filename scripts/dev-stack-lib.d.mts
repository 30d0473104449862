// Types for scripts/dev-stack-lib.mjs (the deciding parts of `npm start`).

export declare const devAppId: string;
export declare const stateFile: string;
export declare const devStackUsage: string;

export declare class DevStackUsageError extends Error {}

export interface DevStackOptions {
  emulatorPort: number;
  webPort: number;
  /** Where the state is kept (DEV_STACK_DATA_DIR); null: .data/dev. */
  dataDir: string | null;
  fresh: boolean;
  authFunctions: boolean;
  help: boolean;
}

export declare function parseDevStackArgs(
  argv: readonly string[],
  env: Record<string, string | undefined>,
): DevStackOptions;

/** The e-mail/password settings of an app, in the emulator's form (LocalUserpassConfig). */
export interface LocalUserpassSettings {
  autoConfirm?: boolean;
  runConfirmationFunction?: boolean;
  runResetFunction?: boolean;
  emailConfirmationUrl?: string;
  resetPasswordUrl?: string;
  [key: string]: unknown;
}

export interface LocalUserpassOverrides {
  emailConfirmationUrl: string;
  resetPasswordUrl: string;
  runConfirmationFunction: boolean;
  runResetFunction: boolean;
}

export declare function localUserpassOverrides(options: {
  webUrl: string;
  authFunctions: boolean;
}): LocalUserpassOverrides;

/** The web app's VITE_AUTH_PROVIDERS for an app folder: its enabled OAuth 2.0 providers, or "none". */
export declare function oauthProvidersOf(appDir: string): string;
export declare function authModesOf(settings: LocalUserpassSettings): {
  VITE_AUTH_CONFIRMATION: "email" | "function" | "auto";
  VITE_AUTH_RESET: "email" | "function";
};

export declare function folderLocalUserpass(appDir: string): LocalUserpassSettings;

export declare function prepareDataDir(
  dataDir: string,
  options: { fresh: boolean; overrides: LocalUserpassOverrides; appDir: string },
): { fresh: boolean; localUserpass: LocalUserpassSettings };

export declare function emulatorConfig(overrides: LocalUserpassOverrides, appId?: string): Record<string, unknown>;

export declare function emulatorArgs(options: {
  emulatorPort: number;
  webUrl: string;
  dataDir: string;
  configFile: string;
}): string[];

export declare function waitForHealth(
  emulatorUrl: string,
  options?: { timeoutMs?: number; isAlive?: () => boolean; startedAfter?: number },
): Promise<void>;

/**
 * Resolves once `url` answers a GET with a 2xx status (that `accept` takes, when given); rejects
 * when `isAlive` says its server ended, or at the timeout.
 */
export declare function waitForAnswer(
  url: string,
  options?: {
    what?: string;
    timeoutMs?: number;
    isAlive?: () => boolean;
    accept?: (reply: Response) => Promise<boolean>;
  },
): Promise<void>;

/** Whether a server can listen on `port` of 127.0.0.1 now. */
export declare function portFree(port: number): Promise<boolean>;

export interface SeedUser {
  email: string;
  password: string;
  confirmed?: boolean;
  displayName?: string;
  notes?: { title: string; body?: string }[];
}

export interface Seed {
  users: SeedUser[];
  emailjsAccount: Record<string, unknown> | null;
}

export declare function readSeed(path: string): Seed;

export declare function applySeed(
  emulatorUrl: string,
  seed: Seed,
  options?: { appId?: string; now?: Date },
): Promise<void>;
