/**
 * The app's configuration, validated once at start. Values come from the `VITE_` variables baked
 * in at build time; a deployment (or a test harness serving one build for many backends) may
 * override any of them at run time with `window.__APP_CONFIG__ = { VITE_…: "…" }` set before the
 * app's script runs. Nothing here is secret: the EmailJS public key is public by design.
 */

export interface AppConfig {
  /** Where the location lookup starts; the lookup's `hostname` is the base of every later call. */
  appServicesBaseUrl: string;
  appServicesAppId: string;
  emailJsOrigin: string;
  emailJsPublicKey: string;
  emailJsServiceId: string;
  emailJsContactTemplateId: string;
  emailJsNoteTemplateId: string;
  /**
   * How the app's e-mail/password provider confirms new accounts: by an e-mailed link, by its
   * confirmation function (an account may wait for approval), or automatically. The client cannot
   * ask the service, so the deployment says it (App Services' `autoConfirm` and
   * `runConfirmationFunction`); the pages offer only what can work.
   */
  authConfirmation: "email" | "function" | "auto";
  /** How the provider resets passwords: by an e-mailed link, or by its reset function (`runResetFunction`). */
  authReset: "email" | "function";
  /**
   * The OAuth 2.0 providers the app's backend has enabled (`oauth2-google`, `oauth2-apple`,
   * `oauth2-facebook`), comma-separated in the order the buttons appear: `google,apple,facebook`;
   * empty for none. The pages offer "Continue with …" only for these.
   */
  authProviders: string;
}

export const oauthProviderNames = ["google", "apple", "facebook"] as const;
export type OAuthProviderName = (typeof oauthProviderNames)[number];

/** The enabled providers, in order. */
export function enabledOAuthProviders(value: string): OAuthProviderName[] {
  return value === "" ? [] : (value.split(",") as OAuthProviderName[]);
}

type Check = (value: string) => string | null;

const httpUrl: Check = (value) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute URL such as https://services.cloud.mongodb.com";
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return "must start with http:// or https://";
  if (url.search || url.hash) return "must not contain a query string or a fragment";
  return null;
};

const identifier: Check = (value) =>
  /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(value) && value.length <= 128
    ? null
    : "must be letters, digits, '.', '_' or '-' (at most 128 characters)";

const token: Check = (value) => (/^\S+$/.test(value) ? null : "must not be empty or contain spaces");

const oneOf =
  (...allowed: string[]): Check =>
  (value) =>
    allowed.includes(value)
      ? null
      : `must be ${allowed
          .map((a) => `"${a}"`)
          .join(", ")
          .replace(/, ([^,]*)$/, " or $1")}`;

/** A comma-separated list of distinct names among `allowed` (or "none"); stored without spaces. */
const listOf =
  (...allowed: string[]): Check =>
  (value) => {
    if (value === "none") return null;
    const names = value.split(",").map((n) => n.trim());
    const wrong = names.filter((n) => !allowed.includes(n));
    if (wrong.length > 0)
      return `may only name ${allowed.join(", ")} (comma-separated), or none: not ${wrong.join(", ")}`;
    if (new Set(names).size !== names.length) return "names a provider twice";
    return null;
  };

const variables = {
  VITE_APP_SERVICES_BASE_URL: { key: "appServicesBaseUrl", check: httpUrl },
  VITE_APP_SERVICES_APP_ID: { key: "appServicesAppId", check: identifier },
  VITE_EMAILJS_ORIGIN: { key: "emailJsOrigin", check: httpUrl },
  VITE_EMAILJS_PUBLIC_KEY: { key: "emailJsPublicKey", check: token },
  VITE_EMAILJS_SERVICE_ID: { key: "emailJsServiceId", check: token },
  VITE_EMAILJS_CONTACT_TEMPLATE_ID: { key: "emailJsContactTemplateId", check: token },
  VITE_EMAILJS_NOTE_TEMPLATE_ID: { key: "emailJsNoteTemplateId", check: token },
  // Not harness values: App Services' own defaults, so every build may carry them.
  VITE_AUTH_CONFIRMATION: { key: "authConfirmation", check: oneOf("email", "function", "auto"), fallback: "email" },
  VITE_AUTH_RESET: { key: "authReset", check: oneOf("email", "function"), fallback: "email" },
  // App Services enables no OAuth 2.0 provider unless the app configures one.
  VITE_AUTH_PROVIDERS: { key: "authProviders", check: listOf(...oauthProviderNames), fallback: "none" },
} as const satisfies Record<string, { key: keyof AppConfig; check: Check; fallback?: string }>;

export type ConfigVariable = keyof typeof variables;

/**
 * The local harness's value of each variable this build was not given (vite.config.ts,
 * harness-defaults.json): a build given them all carries none.
 */
const buildDefaults: Partial<Record<ConfigVariable, string>> = __HARNESS_DEFAULTS__;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`The app is not configured correctly:\n${problems.map((p) => `• ${p}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/**
 * Validates the variables; later sources win over earlier ones. Empty strings count as unset (an
 * empty line in a .env file), so the build's defaults apply. URLs lose their trailing slashes, because
 * both clients append paths to them.
 */
export function parseConfig(...sources: Array<Record<string, unknown> | undefined>): AppConfig {
  const problems: string[] = [];
  const config = {} as AppConfig;
  for (const [name, spec] of Object.entries(variables) as Array<[ConfigVariable, (typeof variables)[ConfigVariable]]>) {
    let raw: unknown;
    for (const source of sources) {
      const value = source?.[name];
      if (value !== undefined && value !== "") raw = value;
    }
    if (raw === undefined) raw = buildDefaults[name] ?? ("fallback" in spec ? spec.fallback : undefined);
    if (raw === undefined) {
      problems.push(`${name} is not set: this build has no default for it (see web/.env.example).`);
      continue;
    }
    if (typeof raw !== "string") {
      problems.push(`${name} must be a string (got ${typeof raw}).`);
      continue;
    }
    const value = raw.trim();
    const problem = spec.check(value);
    if (problem) {
      problems.push(`${name} ${problem} (got "${value}").`);
      continue;
    }
    (config as unknown as Record<string, string>)[spec.key] =
      spec.check === httpUrl
        ? value.replace(/\/+$/, "")
        : name === "VITE_AUTH_PROVIDERS"
          ? value === "none"
            ? ""
            : value.replace(/\s+/g, "")
          : value;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

declare global {
  interface Window {
    /** Run-time overrides of the VITE_ variables (same names), for one build served to several backends. */
    __APP_CONFIG__?: Partial<Record<ConfigVariable, string>>;
  }
}

function load(): AppConfig {
  try {
    return parseConfig(import.meta.env, typeof window === "undefined" ? undefined : window.__APP_CONFIG__);
  } catch (error) {
    // Fail fast and say why in the page itself: nothing else can work without a valid configuration.
    const root = typeof document === "undefined" ? null : document.getElementById("root");
    if (root && error instanceof ConfigError) {
      const main = document.createElement("main");
      const box = document.createElement("div");
      box.setAttribute("role", "alert");
      const heading = document.createElement("h1");
      heading.textContent = "The app is not configured correctly";
      const list = document.createElement("ul");
      for (const problem of error.problems) {
        const item = document.createElement("li");
        item.textContent = problem;
        list.append(item);
      }
      const hint = document.createElement("p");
      hint.textContent = "Fix these variables (see web/.env.example) and rebuild or restart the app.";
      box.append(heading, list, hint);
      main.append(box);
      root.replaceChildren(main);
    }
    console.error(error);
    throw error;
  }
}

export const config: AppConfig = load();
