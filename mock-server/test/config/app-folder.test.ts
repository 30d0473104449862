/**
 * An exported app's folder (`--app DIR`): its triggers and HTTPS endpoints are read;
 * what this server does not run of it — other triggers, Device Sync, an endpoint it cannot serve —
 * is named at start, so that an app brought over does not quietly lose what it did on the service.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { appFolderProblem, loadAppFolder } from "../../src/config/app-folder.ts";
import { testApp } from "../helpers/app.ts";
import { logLines } from "../helpers/log-lines.ts";

const folder = mkdtempSync(join(tmpdir(), "app-folder-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function exportedApp(name: string, files: Record<string, unknown>): string {
  const dir = join(folder, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(
      join(dir, path),
      path.endsWith(".js") && typeof content === "string" ? content : JSON.stringify(content),
    );
  }
  return dir;
}

const withTriggers = exportedApp("with-triggers", {
  "realm_config.json": { app_id: "exported-abcde", name: "exported" },
  "triggers/newUser.json": {
    name: "newUser",
    type: "AUTHENTICATION",
    function_name: "createNewUserDocument",
    config: { providers: ["local-userpass"], operation_type: "CREATE" },
    disabled: false,
  },
  "triggers/onLogin.json": {
    name: "onLogin",
    type: "AUTHENTICATION",
    config: { providers: ["anon-user", "custom-jwt-unknown"], operation_type: "LOGIN" },
    event_processors: { FUNCTION: { config: { function_name: "countLogin" } } },
  },
  // No function: not run.
  "triggers/nightly.json": { name: "nightly", type: "SCHEDULED", config: { schedule: "0 0 * * *" } },
  "triggers/cleanup.json": {
    name: "cleanup",
    type: "SCHEDULED",
    config: { schedule: "0 3 * * *", skip_catchup_events: true },
    event_processors: { FUNCTION: { config: { function_name: "cleanup" } } },
  },
  "triggers/onNote.json": {
    name: "onNote",
    type: "DATABASE",
    config: {
      service_name: "mongodb-atlas",
      database: "notes-app",
      collection: "notes",
      operation_types: ["INSERT", "UPDATE"],
      full_document: true,
      full_document_before_change: false,
      match: { "fullDocument.public": true },
      project: {},
      unordered: false,
      skip_catchup_events: false,
    },
    event_processors: { FUNCTION: { config: { function_name: "publish" } } },
  },
  // A collection's own drop is not an operation of a trigger of one collection (App Services
  // takes DROP_COLLECTION for a database's triggers only): not run.
  "triggers/drops.json": {
    name: "drops",
    type: "DATABASE",
    function_name: "x",
    config: { database: "notes-app", collection: "notes", operation_types: ["DROP_COLLECTION"] },
  },
  // Index events are never made here: left out of the operations read.
  "triggers/renames.json": {
    name: "renames",
    type: "DATABASE",
    function_name: "x",
    config: { database: "notes-app", operation_types: ["RENAME_COLLECTION", "CREATE_INDEXES", "DROP_COLLECTION"] },
  },
  "triggers/retired.json": { name: "retired", type: "DATABASE", disabled: true, config: {} },
  "http_endpoints/config.json": [
    { route: "/hook", http_method: "POST", function_name: "hook", disabled: false },
    {
      route: "/webhook",
      http_method: "post",
      function_name: "hook",
      validation_method: "VERIFY_PAYLOAD",
      secret_name: "missing",
    },
    { route: "/odd", http_method: "TRACE", function_name: "hook" },
    { route: "/old", http_method: "GET", function_name: "hook", disabled: true },
  ],
  "sync/config.json": { type: "flexible", state: "enabled", development_mode_enabled: false },
});

describe("appFolderProblem", () => {
  it("takes a folder with an export's root config, and names the ones inside a folder without", () => {
    const current = exportedApp("parent/current", { "realm_config.json": { app_id: "current-abcde" } });
    const older = exportedApp("parent/older", { "config.json": { app_id: "older-abcde" } });
    exportedApp("parent/functions", { "functions/config.json": [] });
    expect(appFolderProblem(current)).toBeUndefined();
    expect(appFolderProblem(older)).toBeUndefined();
    const parent = join(folder, "parent");
    expect(appFolderProblem(parent)).toBe(
      `${parent} is not an App Services app export: it has no realm_config.json (${[current, older]
        .sort()
        .join(", ")} have one)`,
    );
    expect(appFolderProblem(join(parent, "functions"))).toBe(
      `${join(parent, "functions")} is not an App Services app export: it has no realm_config.json`,
    );
    expect(appFolderProblem(join(current, "realm_config.json"))).toBe(
      `${join(current, "realm_config.json")} is not a folder`,
    );
    expect(appFolderProblem(join(folder, "missing"))).toBe(`${join(folder, "missing")} does not exist`);
  });
});

describe("an exported app's folder", () => {
  it("reads its authentication, database and scheduled triggers, in either export form", () => {
    expect(loadAppFolder(withTriggers).config.triggers).toEqual([
      { type: "SCHEDULED", name: "cleanup", functionName: "cleanup", schedule: "0 3 * * *", skipCatchupEvents: true },
      {
        type: "AUTHENTICATION",
        name: "newUser",
        functionName: "createNewUserDocument",
        operationType: "CREATE",
        providers: ["local-userpass"],
      },
      {
        type: "AUTHENTICATION",
        name: "onLogin",
        functionName: "countLogin",
        operationType: "LOGIN",
        providers: ["anon-user"],
      },
      {
        type: "DATABASE",
        name: "onNote",
        functionName: "publish",
        database: "notes-app",
        collection: "notes",
        operationTypes: ["INSERT", "UPDATE"],
        fullDocument: true,
        fullDocumentBeforeChange: false,
        match: { "fullDocument.public": true },
        unordered: false,
      },
      {
        type: "DATABASE",
        name: "renames",
        functionName: "x",
        database: "notes-app",
        operationTypes: ["RENAME_COLLECTION", "DROP_COLLECTION"],
      },
    ]);
  });

  it("reads its HTTPS endpoints and Data API from https_endpoints/ (or http_endpoints/), secrets from secrets.json", () => {
    expect(loadAppFolder(withTriggers).config.endpoints).toEqual([
      { route: "/hook", httpMethod: "POST", functionName: "hook", validationMethod: "NO_VALIDATION" },
      { route: "/webhook", httpMethod: "POST", functionName: "hook", validationMethod: "VERIFY_PAYLOAD" },
    ]);
    const current = exportedApp("endpoints", {
      "realm_config.json": { app_id: "endpoints-abcde" },
      "secrets.json": { hookSecret: "Super5ecr3t" },
      "https_endpoints/data_api_config.json": {
        disabled: false,
        versions: ["v1"],
        can_evaluate: {},
        return_type: "EJSON",
        create_user_on_auth: true,
        run_as_system: false,
        validation_method: "SECRET_AS_QUERY_PARAM",
        secret_name: "hookSecret",
      },
      "https_endpoints/config.json": [
        {
          route: "/hello/latest",
          http_method: "*",
          function_name: "endpoint/hello",
          validation_method: "SECRET_AS_QUERY_PARAM",
          secret_name: "hookSecret",
          respond_result: true,
          fetch_custom_user_data: true,
          create_user_on_auth: false,
          return_type: "EJSON",
          disabled: false,
        },
      ],
    });
    const loaded = loadAppFolder(current);
    expect(loaded.config.dataApi).toEqual({
      disabled: false,
      versions: ["v1"],
      returnType: "EJSON",
      createUserOnAuth: true,
      validationMethod: "SECRET_AS_QUERY_PARAM",
      secret: "Super5ecr3t",
      canEvaluate: {},
    });
    expect(loaded.config.endpoints).toEqual([
      {
        route: "/hello/latest",
        httpMethod: "*",
        functionName: "endpoint/hello",
        validationMethod: "SECRET_AS_QUERY_PARAM",
        secret: "Super5ecr3t",
        respondResult: true,
        returnType: "EJSON",
        fetchCustomUserData: true,
        createUserOnAuth: false,
      },
    ]);
    expect(loaded.notRun).toEqual([]);
  });

  it("reads a custom JWT provider's keys (rotation), algorithm, JWK URI and audiences", () => {
    const provider = (config: Record<string, unknown>, keys: string[] = []) => ({
      "custom-token": {
        name: "custom-token",
        type: "custom-token",
        disabled: false,
        config,
        secret_config: { signingKeys: keys },
        metadata_fields: [{ required: false, name: "email", field_name: "email" }],
      },
    });
    const rotating = exportedApp("jwt-keys", {
      "realm_config.json": { app_id: "jwt-keys-abcde" },
      "secrets.json": { newKey: "k".repeat(32), oldKey: "o".repeat(32) },
      "auth/providers.json": provider({ audience: "notes", signingAlgorithm: "HS256", useJWKURI: false }, [
        "newKey",
        "oldKey",
      ]),
    });
    expect(loadAppFolder(rotating).config.providers?.["custom-token"]).toEqual({
      enabled: true,
      signingKey: "k".repeat(32),
      signingKeys: ["o".repeat(32)],
      signingAlgorithm: "HS256",
      audience: "notes",
      metadataFields: [{ name: "email", fieldName: "email" }],
    });
    // The documentation's Firebase template.
    const firebase = exportedApp("jwt-firebase", {
      "realm_config.json": { app_id: "jwt-firebase-abcde" },
      "auth/providers.json": provider({
        audience: ["my-project"],
        jwkURI: "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
        useJWKURI: true,
      }),
    });
    expect(loadAppFolder(firebase).config.providers?.["custom-token"]).toEqual({
      enabled: true,
      jwkUri: "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com",
      audience: ["my-project"],
      metadataFields: [{ name: "email", fieldName: "email" }],
    });
  });

  it("names the parts this server does not run, leaving out disabled ones", () => {
    expect(loadAppFolder(withTriggers).notRun).toEqual([
      "trigger 'drops' (DATABASE)",
      "trigger 'nightly' (SCHEDULED)",
      "HTTPS endpoint POST /webhook (its secret 'missing' is not in secrets.json: every request is refused)",
      "HTTPS endpoint TRACE /odd",
      "Device Sync (flexible)",
    ]);
    const plain = exportedApp("plain", {
      "realm_config.json": { app_id: "plain-abcde" },
      "sync/config.json": { type: "flexible", state: "disabled" },
      "http_endpoints/config.json": [],
    });
    expect(loadAppFolder(plain).notRun).toEqual([]);
    // Functions that run multi-document transactions are run as any other.
    const transactions = exportedApp("transactions", {
      "realm_config.json": { app_id: "transactions-abcde" },
      "functions/config.json": [{ name: "trade" }],
      "functions/trade.js":
        "exports = async () => { const session = context.services.get('mongodb-atlas').startSession(); await session.withTransaction(async () => {}); };",
    });
    expect(loadAppFolder(transactions).notRun).toEqual([]);
    // External dependencies without functions/node_modules, and each require() that will find nothing.
    const dependencies = exportedApp("dependencies", {
      "realm_config.json": { app_id: "dependencies-abcde" },
      "functions/config.json": [{ name: "pay" }, { name: "plain" }],
      "functions/package.json": { dependencies: { stripe: "^12.0.0" } },
      "functions/pay.js":
        "exports = (name) => { const crypto = require('node:crypto'); const stripe = require('stripe'); return [require(name), require(\"stripe/lib\"), require('child_process'), require('util')]; };",
      "functions/plain.js": "exports = () => 'required fields: ' + typeof require('buffer').Buffer;",
    });
    // (buffer, crypto, util and the others offered are there.)
    expect(loadAppFolder(dependencies).notRun).toEqual([
      "external dependencies of functions (functions/package.json; no functions/node_modules: npm install in functions/)",
      "require('child_process') in function 'pay'",
      "require('stripe') in function 'pay'",
      "require('stripe/lib') in function 'pay'",
      "require() of a computed name in function 'pay'",
    ]);
    // Installed: the packages it holds are found; nothing is said of them.
    const installed = exportedApp("installed", {
      "realm_config.json": { app_id: "installed-abcde" },
      "functions/config.json": [{ name: "pay" }],
      "functions/package.json": { dependencies: { stripe: "^12.0.0" } },
      "functions/node_modules/stripe/package.json": { name: "stripe", main: "index.js" },
      "functions/pay.js": "exports = () => require('stripe');",
    });
    expect(loadAppFolder(installed).notRun).toEqual([]);
  });

  it("warns at start, once per app, with what is not run", async () => {
    const { logStream, lines } = logLines();
    const app = await testApp({ appDirs: [withTriggers], logLevel: "warn", logStream });
    try {
      await app.ready();
      const warnings = lines.filter((line) => line.level === 40);
      expect(warnings).toEqual([
        expect.objectContaining({
          appId: "exported-abcde",
          notRun: [
            "trigger 'drops' (DATABASE)",
            "trigger 'nightly' (SCHEDULED)",
            "HTTPS endpoint POST /webhook (its secret 'missing' is not in secrets.json: every request is refused)",
            "HTTPS endpoint TRACE /odd",
            "Device Sync (flexible)",
          ],
          msg: "parts of the exported app are not run by this server (docs/production.md#not-provided)",
        }),
      ]);
    } finally {
      await app.close();
    }
  });

  it("names at start the namespaces whose rules.json it does not evaluate, whose actions it refuses", async () => {
    const withRules = exportedApp("with-rules", {
      "realm_config.json": { app_id: "rules-abcde" },
      "data_sources/mongodb-atlas/config.json": { name: "mongodb-atlas", type: "mongodb-atlas" },
      "data_sources/mongodb-atlas/hr/staff/rules.json": {
        collection: "staff",
        database: "hr",
        roles: [{ name: "own", apply_when: { user_id: "%%user.id" }, read: true, write: true }],
      },
      "data_sources/mongodb-atlas/hr/typo/rules.json": {
        collection: "typo",
        database: "hr",
        roles: [
          { name: "own", apply_when: {}, document_filters: { read: { owner: { $eqq: "%%user.id" } } }, read: true },
        ],
      },
    });
    const { logStream, lines } = logLines();
    const app = await testApp({ appDirs: [withRules], logLevel: "warn", logStream });
    try {
      await app.ready();
      expect(lines.filter((line) => line.level === 40)).toEqual([
        expect.objectContaining({
          appId: "rules-abcde",
          notRun: ["rules of 'hr.typo' (unknown operator: $eqq: its actions are refused)"],
        }),
      ]);
    } finally {
      await app.close();
    }
  });
});
