/**
 * An exported app's folder (`--app DIR`): its triggers are read;
 * what this server does not run of it — other triggers, HTTPS endpoints, Device Sync — is named at
 * start, so that an app brought over does not quietly lose what it did on the service.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadAppFolder } from "../../src/config/app-folder.ts";
import { testApp } from "../helpers/app.ts";
import { logLines } from "../helpers/log-lines.ts";

const folder = mkdtempSync(join(tmpdir(), "app-folder-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function exportedApp(name: string, files: Record<string, unknown>): string {
  const dir = join(folder, name);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), JSON.stringify(content));
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
  "triggers/drops.json": {
    name: "drops",
    type: "DATABASE",
    function_name: "x",
    config: { database: "notes-app", operation_types: ["DROP_COLLECTION"] },
  },
  "triggers/retired.json": { name: "retired", type: "DATABASE", disabled: true, config: {} },
  "http_endpoints/config.json": [{ route: "/hook", http_method: "POST", function_name: "hook", disabled: false }],
  "sync/config.json": { type: "flexible", state: "enabled", development_mode_enabled: false },
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
    ]);
  });

  it("names the parts this server does not run, leaving out disabled ones", () => {
    expect(loadAppFolder(withTriggers).notRun).toEqual([
      "trigger 'drops' (DATABASE)",
      "trigger 'nightly' (SCHEDULED)",
      "HTTPS endpoint POST /hook",
      "Device Sync (flexible)",
    ]);
    const plain = exportedApp("plain", {
      "realm_config.json": { app_id: "plain-abcde" },
      "sync/config.json": { type: "flexible", state: "disabled" },
      "http_endpoints/config.json": [],
    });
    expect(loadAppFolder(plain).notRun).toEqual([]);
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
            "HTTPS endpoint POST /hook",
            "Device Sync (flexible)",
          ],
          msg: "parts of the exported app are not run by this server (docs/production.md#not-provided)",
        }),
      ]);
    } finally {
      await app.close();
    }
  });
});
