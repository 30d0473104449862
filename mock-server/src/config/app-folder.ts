/**
 * Reads an app exported from App Services (its folder layout) into the emulator's AppConfig, so a
 * user can point the emulator at their own exported app (`--app DIR`). Functions stay in the
 * folder (the function runner loads and watches them); everything else becomes config:
 *
 *   realm_config.json | config.json       app_id, name, allowed_request_origins, environment
 *   auth/providers.json                    providers and their settings
 *   auth/custom_user_data.json             custom user data
 *   values/*.json                          values (`from_secret` values read secrets.json)
 *   environments/<environment>.json        environment values
 *   data_sources/<service>/config.json      the linked cluster's service name (and cluster name)
 *   data_sources/<service>/<db>/<coll>/rules.json, default_rule.json: rules (a subset)
 *   data_sources/<service>/<db>/<coll>/schema.json: the collection's schema
 *   triggers/*.json                        authentication, database and scheduled triggers
 *   https_endpoints/config.json            custom HTTPS endpoints (http_endpoints/ in older exports)
 *   secrets.json                           emulator extension: secret values (an export has none)
 *
 * What an export holds that this server does not run — triggers of other kinds, Device Sync — or
 * runs only in part (an endpoint whose secret is not in secrets.json) is listed (`notRun`), for the
 * start to say so.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { functionModules, ModuleArchiveError } from "../functions/module-archive.ts";
import { type AppConfig, type CollectionRule, type OAuth2ProviderConfig, providerNames } from "./app-config.ts";
import { offeredModules, packageNameOf } from "./function-modules.ts";

export interface AppFolder {
  appId: string | undefined;
  config: AppConfig;
  /** The parts of the export this server does not run (enabled ones only), one line each. */
  notRun: string[];
}

type Json = Record<string, unknown>;

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(`Cannot read ${path}: ${(error as Error).message}`);
  }
}

function readJsonIfExists(path: string): unknown {
  return existsSync(path) ? readJson(path) : undefined;
}

const asObject = (v: unknown): Json => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const asString = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const asBoolean = (v: unknown): boolean | undefined => (typeof v === "boolean" ? v : undefined);

/**
 * A namespace's `rules.json` (or `default_rule.json`) as App Services exports it: its roles and
 * filters, kept as they are and evaluated per request (data/role-rules.ts).
 */
export function mapRules(raw: unknown): CollectionRule | undefined {
  const rules = asObject(raw);
  const roles = Array.isArray(rules.roles) ? rules.roles.map(asObject) : [];
  const filters = Array.isArray(rules.filters) ? rules.filters.map(asObject) : [];
  if (roles.length === 0 && filters.length === 0) return undefined;
  return { roles, filters } as CollectionRule;
}

/**
 * The linked MongoDB cluster (`data_sources/<service name>/config.json` of type `mongodb-atlas`):
 * its folder, service name and cluster name. The first such one; the others, and the data
 * sources of other types (Atlas Data Federation), go to `notRun`.
 */
function loadDataSource(dir: string, notRun: string[]): { base: string; source?: AppConfig["dataSource"] } | undefined {
  const sources = join(dir, "data_sources");
  if (!existsSync(sources)) return undefined;
  let found: { base: string; source?: AppConfig["dataSource"] } | undefined;
  for (const folder of readdirSync(sources).sort()) {
    const base = join(sources, folder);
    if (!statSync(base).isDirectory()) continue;
    const config = asObject(readJsonIfExists(join(base, "config.json")));
    const type = asString(config.type) ?? "mongodb-atlas";
    const name = asString(config.name) ?? folder;
    if (type !== "mongodb-atlas" || found) {
      notRun.push(`data source '${name}' (${type}${found ? ": one linked cluster is served" : ""})`);
      continue;
    }
    const clusterName = asString(asObject(config.config).clusterName);
    found = { base, source: { name, ...(clusterName ? { clusterName } : {}) } };
  }
  return found;
}

function loadRules(base: string): AppConfig["rules"] {
  const rules: Record<string, CollectionRule> = {};
  const defaultRule = mapRules(readJsonIfExists(join(base, "default_rule.json")));
  if (defaultRule) rules.default = defaultRule;
  for (const db of readdirSync(base)) {
    const dbDir = join(base, db);
    if (!statSync(dbDir).isDirectory()) continue;
    for (const coll of readdirSync(dbDir)) {
      const rule = mapRules(readJsonIfExists(join(dbDir, coll, "rules.json")));
      if (rule) rules[`${db}.${coll}`] = rule;
    }
  }
  return Object.keys(rules).length > 0 ? rules : undefined;
}

/** The collections' schemas (`<db>/<coll>/schema.json`; an empty one is none): data/schemas.ts. */
function loadSchemas(base: string): AppConfig["schemas"] {
  const schemas: Record<string, Record<string, unknown>> = {};
  for (const db of readdirSync(base)) {
    const dbDir = join(base, db);
    if (!statSync(dbDir).isDirectory()) continue;
    for (const coll of readdirSync(dbDir)) {
      const schema = asObject(readJsonIfExists(join(dbDir, coll, "schema.json")));
      if (Object.keys(schema).length > 0) schemas[`${db}.${coll}`] = schema;
    }
  }
  return Object.keys(schemas).length > 0 ? schemas : undefined;
}

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : []);

/**
 * An OAuth 2.0 provider as App Services exports it: `config.clientId` (and Google's `openId`),
 * `secret_config.clientSecret` naming a secret, `redirect_uris`, `metadata_fields`,
 * `domain_restrictions`; Apple's `teamId` and `keyId` (ours) when its secret is a `.p8` key.
 */
function oauth2Provider(raw: Json, settings: Json, secrets: Json, enabled: boolean): OAuth2ProviderConfig {
  const secretName = asString(asObject(raw.secret_config).clientSecret);
  const clientSecret = asString(settings.clientSecret) ?? (secretName ? asString(secrets[secretName]) : undefined);
  const metadata = Array.isArray(raw.metadata_fields) ? raw.metadata_fields.map(asObject) : [];
  const out: OAuth2ProviderConfig = { enabled };
  const clientId = asString(settings.clientId);
  if (clientId) out.clientId = clientId;
  if (clientSecret) out.clientSecret = clientSecret;
  for (const key of ["teamId", "keyId"] as const) {
    const value = asString(settings[key]);
    if (value) out[key] = value;
  }
  const openId = asBoolean(settings.openId);
  if (openId !== undefined) out.openId = openId;
  const redirectUris = strings(raw.redirect_uris);
  if (redirectUris.length > 0) out.redirectUris = redirectUris;
  const domains = strings(raw.domain_restrictions);
  if (domains.length > 0) out.domainRestrictions = domains;
  const fields = metadata
    .filter((m) => typeof m.name === "string")
    // App Services' own examples write `required` as a string ("<boolean>").
    .map((m) => ({
      name: m.name as string,
      ...(m.required === true || m.required === "true" ? { required: true } : {}),
    }));
  if (fields.length > 0) out.metadataFields = fields;
  return out;
}

/**
 * Whether `dir` is an export's root: its realm_config.json, or in older exports a config.json that
 * names the app (not functions/config.json, a list, or a data source's or endpoint's).
 */
function isAppRoot(dir: string): boolean {
  if (existsSync(join(dir, "realm_config.json"))) return true;
  try {
    const legacy = asObject(readJsonIfExists(join(dir, "config.json")));
    return "app_id" in legacy || "config_version" in legacy;
  } catch {
    return false;
  }
}

/**
 * Why `dir` is not an app folder (`--app`), or undefined when it is one: a folder with an export's
 * root config. A folder without one (a parent of the export, its functions/) would be served as an
 * empty app nobody's client names.
 */
export function appFolderProblem(dir: string): string | undefined {
  if (!existsSync(dir)) return `${dir} does not exist`;
  if (!statSync(dir).isDirectory()) return `${dir} is not a folder`;
  if (isAppRoot(dir)) return undefined;
  const inside = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && isAppRoot(join(dir, entry.name)))
    .map((entry) => join(dir, entry.name));
  return (
    `${dir} is not an App Services app export: it has no realm_config.json` +
    (inside.length > 0 ? ` (${inside.join(", ")} ${inside.length > 1 ? "have" : "has"} one)` : "")
  );
}

export function loadAppFolder(dir: string): AppFolder {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`App folder ${dir} does not exist`);
  const root = asObject(readJsonIfExists(join(dir, "realm_config.json")) ?? readJsonIfExists(join(dir, "config.json")));
  const secrets = asObject(readJsonIfExists(join(dir, "secrets.json")));
  const config: AppConfig = {};
  const name = asString(root.name);
  if (name) config.name = name;
  if (Array.isArray(root.allowed_request_origins)) {
    config.allowedRequestOrigins = root.allowed_request_origins.filter((o): o is string => typeof o === "string");
  }

  const providers = asObject(readJsonIfExists(join(dir, "auth", "providers.json")));
  config.providers = {};
  for (const raw of Object.values(providers).map(asObject)) {
    const type = asString(raw.type) ?? asString(raw.name);
    const enabled = raw.disabled !== true;
    const settings = asObject(raw.config);
    switch (type) {
      case "anon-user":
      case "api-key":
        config.providers[type] = { enabled };
        break;
      case "local-userpass": {
        const p: NonNullable<NonNullable<AppConfig["providers"]>["local-userpass"]> = { enabled };
        for (const key of ["autoConfirm", "runConfirmationFunction", "runResetFunction"] as const) {
          const v = asBoolean(settings[key]);
          if (v !== undefined) p[key] = v;
        }
        for (const key of [
          "emailConfirmationUrl",
          "confirmEmailSubject",
          "confirmationFunctionName",
          "resetPasswordUrl",
          "resetPasswordSubject",
          "resetFunctionName",
        ] as const) {
          const v = asString(settings[key]);
          if (v !== undefined) p[key] = v;
        }
        config.providers["local-userpass"] = p;
        break;
      }
      case "custom-token": {
        // Up to three keys, each a secret's name (rotation); or the keys of a JWK URI.
        const keyNames = asObject(raw.secret_config).signingKeys;
        const keys = (Array.isArray(keyNames) ? keyNames : [])
          .map((name) => asString(secrets[String(name)]))
          .filter((key): key is string => key !== undefined && key !== "");
        const [signingKey = asString(settings.signingKey), ...signingKeys] = keys;
        const jwkUri = settings.useJWKURI === true ? asString(settings.jwkURI) : undefined;
        const algorithm = asString(settings.signingAlgorithm);
        const audience = Array.isArray(settings.audience)
          ? settings.audience.filter((a): a is string => typeof a === "string")
          : asString(settings.audience);
        const metadata = Array.isArray(raw.metadata_fields) ? raw.metadata_fields.map(asObject) : [];
        config.providers["custom-token"] = {
          enabled,
          ...(signingKey ? { signingKey } : {}),
          ...(signingKeys.length > 0 ? { signingKeys: signingKeys.slice(0, 2) } : {}),
          ...(algorithm === "HS256" || algorithm === "RS256" ? { signingAlgorithm: algorithm } : {}),
          ...(jwkUri ? { jwkUri } : {}),
          ...(audience !== undefined && audience !== "" ? { audience } : {}),
          ...(settings.requireAnyAudience === true ? { requireAnyAudience: true } : {}),
          ...(metadata.length > 0
            ? {
                metadataFields: metadata
                  .filter((m) => typeof m.name === "string")
                  .map((m) => ({
                    name: m.name as string,
                    ...(asString(m.field_name) ? { fieldName: asString(m.field_name) } : {}),
                    ...(m.required === true ? { required: true } : {}),
                  })),
              }
            : {}),
        };
        break;
      }
      case "custom-function": {
        const authFunctionName = asString(settings.authFunctionName);
        config.providers["custom-function"] = { enabled, ...(authFunctionName ? { authFunctionName } : {}) };
        break;
      }
      case "oauth2-google":
      case "oauth2-apple":
      case "oauth2-facebook":
        config.providers[type] = oauth2Provider(raw, settings, secrets, enabled);
        break;
      default:
        // Other provider types (custom JWT with JWKS, Firebase, Okta…) are not emulated.
        break;
    }
  }

  const customUserData = asObject(readJsonIfExists(join(dir, "auth", "custom_user_data.json")));
  if (Object.keys(customUserData).length > 0) {
    config.customUserData = {
      enabled: customUserData.enabled === true,
      ...(asString(customUserData.database_name) ? { database: asString(customUserData.database_name) } : {}),
      ...(asString(customUserData.collection_name) ? { collection: asString(customUserData.collection_name) } : {}),
      ...(asString(customUserData.user_id_field) ? { userIdField: asString(customUserData.user_id_field) } : {}),
    };
  }

  const valuesDir = join(dir, "values");
  if (existsSync(valuesDir)) {
    config.values = {};
    for (const file of readdirSync(valuesDir)
      .filter((f) => f.endsWith(".json"))
      .sort()) {
      const value = asObject(readJson(join(valuesDir, file)));
      const valueName = asString(value.name);
      if (!valueName) continue;
      config.values[valueName] = value.from_secret === true ? secrets[String(value.value)] : value.value;
    }
  }

  const environment = asString(root.environment) ?? "no-environment";
  const env = asObject(readJsonIfExists(join(dir, "environments", `${environment}.json`)));
  config.environment = { tag: environment === "no-environment" ? "" : environment, values: asObject(env.values) };

  const found: string[] = [];
  const data = loadDataSource(dir, found);
  if (data?.source) config.dataSource = data.source;
  const rules = data && loadRules(data.base);
  if (rules) config.rules = rules;
  const schemas = data && loadSchemas(data.base);
  if (schemas) config.schemas = schemas;
  const triggers = loadTriggers(dir, found);
  if (triggers.length > 0) config.triggers = triggers;
  const endpoints = loadEndpoints(dir, secrets, found);
  if (endpoints.length > 0) config.endpoints = endpoints;
  const dataApi = loadDataApi(dir, secrets, found);
  if (dataApi) config.dataApi = dataApi;
  return { appId: asString(root.app_id) ?? asString(root.client_app_id), config, notRun: notRun(dir, found) };
}

type Trigger = NonNullable<AppConfig["triggers"]>[number];
type AuthenticationTrigger = Extract<Trigger, { type: "AUTHENTICATION" }>;
type DatabaseTrigger = Extract<Trigger, { type: "DATABASE" }>;
type ScheduledTrigger = Extract<Trigger, { type: "SCHEDULED" }>;

/** A scheduled trigger: a five-field CRON schedule (checked further where it runs). */
function scheduledTrigger(name: string, functionName: string, settings: Json): ScheduledTrigger | undefined {
  const schedule = asString(settings.schedule)?.trim() ?? "";
  if (schedule.split(/\s+/).length !== 5) return undefined;
  return {
    type: "SCHEDULED",
    name,
    functionName,
    schedule,
    ...(asBoolean(settings.skip_catchup_events) !== undefined
      ? { skipCatchupEvents: settings.skip_catchup_events as boolean }
      : {}),
  };
}

const documentOperations = ["INSERT", "UPDATE", "REPLACE", "DELETE"] as const;
/** The collections' own operations a database trigger (one without a collection) may ask for. */
const collectionOperations = ["DROP_COLLECTION", "RENAME_COLLECTION"] as const;

/** An authentication trigger's settings as this server runs them, or undefined when it cannot. */
function authenticationTrigger(name: string, functionName: string, settings: Json): AuthenticationTrigger | undefined {
  const operationType = asString(settings.operation_type);
  const providers = (Array.isArray(settings.providers) ? settings.providers : []).filter(
    (provider): provider is AuthenticationTrigger["providers"][number] =>
      typeof provider === "string" && (providerNames as readonly string[]).includes(provider),
  );
  if (operationType !== "CREATE" && operationType !== "LOGIN" && operationType !== "DELETE") return undefined;
  return providers.length > 0 ? { type: "AUTHENTICATION", name, functionName, operationType, providers } : undefined;
}

/**
 * A database trigger's settings as this server runs them (document changes of a collection or a
 * database; a database's collections dropped or renamed), or undefined when it cannot (only
 * operations this server does not make, such as creating indexes; a cluster-wide source).
 */
function databaseTrigger(name: string, functionName: string, settings: Json): DatabaseTrigger | undefined {
  const database = asString(settings.database);
  const collection = asString(settings.collection);
  const known: readonly string[] = collection ? documentOperations : [...documentOperations, ...collectionOperations];
  const operationTypes = (Array.isArray(settings.operation_types) ? settings.operation_types : []).filter(
    (type): type is DatabaseTrigger["operationTypes"][number] => typeof type === "string" && known.includes(type),
  );
  if (!database || operationTypes.length === 0) return undefined;
  const match = asObject(settings.match);
  const project = asObject(settings.project);
  return {
    type: "DATABASE",
    name,
    functionName,
    database,
    ...(collection ? { collection } : {}),
    operationTypes,
    ...(asBoolean(settings.full_document) !== undefined ? { fullDocument: settings.full_document as boolean } : {}),
    ...(asBoolean(settings.full_document_before_change) !== undefined
      ? { fullDocumentBeforeChange: settings.full_document_before_change as boolean }
      : {}),
    ...(Object.keys(match).length > 0 ? { match } : {}),
    ...(Object.keys(project).length > 0 ? { project } : {}),
    ...(asBoolean(settings.unordered) !== undefined ? { unordered: settings.unordered as boolean } : {}),
  };
}

/**
 * The export's enabled authentication, database and scheduled triggers (`function_name`, or the newer
 * `event_processors.FUNCTION.config.function_name`); the other enabled ones go to `notRun`.
 */
function loadTriggers(dir: string, notRun: string[]): Trigger[] {
  const folder = join(dir, "triggers");
  if (!existsSync(folder)) return [];
  const triggers: Trigger[] = [];
  for (const file of readdirSync(folder)
    .filter((f) => f.endsWith(".json"))
    .sort()) {
    const raw = asObject(readJson(join(folder, file)));
    if (raw.disabled === true) continue;
    const name = asString(raw.name) ?? file.slice(0, -".json".length);
    const type = asString(raw.type) ?? "?";
    const functionName =
      asString(raw.function_name) ??
      asString(asObject(asObject(asObject(raw.event_processors).FUNCTION).config).function_name);
    const settings = asObject(raw.config);
    const trigger = !functionName
      ? undefined
      : type === "AUTHENTICATION"
        ? authenticationTrigger(name, functionName, settings)
        : type === "DATABASE"
          ? databaseTrigger(name, functionName, settings)
          : type === "SCHEDULED"
            ? scheduledTrigger(name, functionName, settings)
            : undefined;
    if (trigger) triggers.push(trigger);
    else notRun.push(`trigger '${name}' (${type})`);
  }
  return triggers;
}

type HttpsEndpoint = NonNullable<AppConfig["endpoints"]>[number];
const endpointMethods = ["GET", "POST", "PUT", "PATCH", "DELETE", "*"] as const;
const validationMethods = ["NO_VALIDATION", "SECRET_AS_QUERY_PARAM", "VERIFY_PAYLOAD"] as const;

/**
 * The export's custom HTTPS endpoints (`https_endpoints/config.json`, or `http_endpoints/` of
 * older exports), the secret of each named in `secret_name` read from secrets.json. One this server
 * cannot serve (no function, an unknown method) goes to `notRun`, and so does one whose secret is
 * missing (served, refusing every request: its check cannot pass).
 */
function loadEndpoints(dir: string, secrets: Json, notRun: string[]): HttpsEndpoint[] {
  const file = ["https_endpoints", "http_endpoints"]
    .map((folder) => join(dir, folder, "config.json"))
    .find((path) => existsSync(path));
  const raw = file ? readJson(file) : undefined;
  const endpoints: HttpsEndpoint[] = [];
  for (const entry of Array.isArray(raw) ? raw.map(asObject) : []) {
    if (entry.disabled === true) continue;
    const route = asString(entry.route);
    const method = asString(entry.http_method)?.toUpperCase();
    const functionName = asString(entry.function_name);
    const named = `HTTPS endpoint ${method ?? "?"} ${route ?? "?"}`;
    if (!route?.startsWith("/") || !functionName || !(endpointMethods as readonly string[]).includes(method ?? "")) {
      notRun.push(named);
      continue;
    }
    const validation = asString(entry.validation_method) ?? asString(entry.verification_method) ?? "NO_VALIDATION";
    const secretName = asString(entry.secret_name);
    const secret = secretName ? asString(secrets[secretName]) : undefined;
    if (validation !== "NO_VALIDATION" && !secret)
      notRun.push(`${named} (its secret '${secretName ?? ""}' is not in secrets.json: every request is refused)`);
    const returnType = asString(entry.return_type);
    endpoints.push({
      route,
      httpMethod: method as HttpsEndpoint["httpMethod"],
      functionName,
      ...((validationMethods as readonly string[]).includes(validation)
        ? { validationMethod: validation as HttpsEndpoint["validationMethod"] }
        : {}),
      ...(secret ? { secret } : {}),
      ...(asBoolean(entry.respond_result) !== undefined ? { respondResult: entry.respond_result as boolean } : {}),
      ...(returnType === "JSON" || returnType === "EJSON" ? { returnType } : {}),
      ...(asBoolean(entry.fetch_custom_user_data) !== undefined
        ? { fetchCustomUserData: entry.fetch_custom_user_data as boolean }
        : {}),
      ...(asBoolean(entry.create_user_on_auth) !== undefined
        ? { createUserOnAuth: entry.create_user_on_auth as boolean }
        : {}),
    });
  }
  return endpoints;
}

/**
 * The export's Data API settings (`https_endpoints/data_api_config.json`, or `http_endpoints/`),
 * the secret it names read from secrets.json (missing: named in `notRun`, every request refused).
 */
function loadDataApi(dir: string, secrets: Json, notRun: string[]): AppConfig["dataApi"] | undefined {
  const file = ["https_endpoints", "http_endpoints"]
    .map((folder) => join(dir, folder, "data_api_config.json"))
    .find((path) => existsSync(path));
  if (!file) return undefined;
  const raw = asObject(readJson(file));
  const versions = (Array.isArray(raw.versions) ? raw.versions : ["v1"]).filter(
    (v): v is "v1" | "beta" => v === "v1" || v === "beta",
  );
  const returnType = asString(raw.return_type);
  const validation = asString(raw.validation_method);
  const secretName = asString(raw.secret_name);
  const secret = secretName ? asString(secrets[secretName]) : undefined;
  if (raw.disabled !== true && validation && validation !== "NO_VALIDATION" && !secret)
    notRun.push(`the Data API (its secret '${secretName ?? ""}' is not in secrets.json: every request is refused)`);
  const runAsUserId = asString(raw.run_as_user_id);
  const script = asString(raw.run_as_user_id_script_source);
  return {
    disabled: raw.disabled === true,
    versions,
    ...(returnType === "JSON" || returnType === "EJSON" ? { returnType } : {}),
    ...(raw.run_as_system === true ? { runAsSystem: true } : {}),
    ...(runAsUserId ? { runAsUserId } : {}),
    ...(script ? { runAsUserIdScriptSource: script } : {}),
    ...(asBoolean(raw.create_user_on_auth) !== undefined
      ? { createUserOnAuth: raw.create_user_on_auth as boolean }
      : {}),
    ...(asBoolean(raw.fetch_custom_user_data) !== undefined
      ? { fetchCustomUserData: raw.fetch_custom_user_data as boolean }
      : {}),
    ...(validation === "NO_VALIDATION" || validation === "SECRET_AS_QUERY_PARAM" || validation === "VERIFY_PAYLOAD"
      ? { validationMethod: validation }
      : {}),
    ...(secret ? { secret } : {}),
    ...(raw.can_evaluate !== undefined ? { canEvaluate: raw.can_evaluate } : {}),
  };
}

/**
 * The enabled Device Sync of an export, its functions' dependencies named or uploaded without a
 * functions/node_modules, and each require() of theirs that will find nothing, after `found`.
 */
function notRun(dir: string, found: string[]): string[] {
  const sync = asObject(readJsonIfExists(join(dir, "sync", "config.json")));
  if (sync.state === "enabled") found.push(`Device Sync (${asString(sync.type) ?? "?"})`);
  const functions = join(dir, "functions");
  // Dependencies come from functions/node_modules or the uploaded archive (unpacked here, at start).
  let modules: string | null = null;
  try {
    modules = functionModules(functions);
  } catch (error) {
    if (!(error instanceof ModuleArchiveError)) throw error;
    found.push(`external dependencies of functions (${error.message})`);
  }
  if (modules === null && existsSync(join(functions, "package.json"))) {
    found.push(
      "external dependencies of functions (functions/package.json; no functions/node_modules: npm install in functions/)",
    );
  }
  found.push(...modulesNotRun(functions, modules));
  return found;
}

/**
 * What the export's functions (functions/config.json) require() that they will not find, one line
 * each: one of Node's modules not offered, a package not in its modules (functions/node_modules or
 * the uploaded archive's), or a computed name.
 */
function modulesNotRun(folder: string, modules: string | null): string[] {
  const entries = readJsonIfExists(join(folder, "config.json"));
  if (!Array.isArray(entries)) return [];
  const lines: string[] = [];
  for (const entry of entries) {
    const name = asString(asObject(entry).name);
    const file = name ? join(folder, `${name}.js`) : undefined;
    if (!name || !file || !existsSync(file)) continue;
    const missing = new Set<string>();
    let computed = false;
    for (const found of readFileSync(file, "utf8").matchAll(/\brequire\s*\(\s*(?:(["'])([^"'\n]+)\1\s*\))?/g)) {
      const request = found[2];
      if (request === undefined) {
        computed = true;
        continue;
      }
      const bare = request.replace(/^node:/, "");
      const packageName = packageNameOf(bare);
      if (offeredModules.includes(bare) || (modules !== null && existsSync(join(modules, packageName)))) continue;
      missing.add(request);
    }
    for (const module of [...missing].sort()) lines.push(`require('${module}') in function '${name}'`);
    if (computed) lines.push(`require() of a computed name in function '${name}'`);
  }
  return lines.sort();
}
