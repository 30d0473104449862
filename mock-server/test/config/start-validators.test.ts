/**
 * The validators a start needs (src/config/start-validators.ts): a `--config` file's and kept
 * state's. The bundle carries them as Ajv's standalone code, made at build time; run from the
 * sources they are compiled. Both must answer alike — the same verdict, the same errors, the same
 * defaults filled in — and the bundle must carry them precompiled (a start compiles none).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { transformSync } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppFolderError, applyConfigFile, validateConfigFile } from "../../src/config/config-file.ts";
import {
  type StartValidator,
  type StartValidatorName,
  standaloneSource,
  startValidator,
} from "../../src/config/start-validators.ts";
import { call, emailUser, newApp, testApp } from "../helpers/app.ts";
import { ensureBuilt, runCli } from "../helpers/emulator-process.ts";

/** The module the bundle carries instead, loaded as the bundle loads it (its `require`s from here). */
function precompiledModule(): { startValidator(name: StartValidatorName): StartValidator } {
  const { code } = transformSync(standaloneSource(), { format: "cjs", loader: "js" });
  const module = { exports: {} as { startValidator(name: StartValidatorName): StartValidator } };
  new Function("module", "exports", "require", code)(module, module.exports, createRequire(import.meta.url));
  return module.exports;
}

/** What a validator makes of a value: its verdict, its errors, and the value afterwards (defaults filled in). */
function verdict(validate: StartValidator, value: unknown) {
  const copy = structuredClone(value);
  const valid = validate(copy);
  return { valid, errors: (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`), after: copy };
}

let state: Record<string, unknown>;
beforeAll(async () => {
  // A state with something of every kind in it.
  const app = await testApp();
  try {
    const appId = await newApp(app, {});
    await emailUser(app, appId, "ada@example.com", "correct horse");
    await call(app, "insertDocuments", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/data/notes-app/notes`,
      payload: { documents: [{ title: "First", at: { $date: "2026-11-22T10:00:00Z" } }] },
    });
    state = (await call(app, "exportState", { method: "GET", url: "/_mock/v1/state" })).body;
  } finally {
    await app.close();
  }
});

const folder = mkdtempSync(join(tmpdir(), "start-validators-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("the start validators", () => {
  it("answer alike, precompiled and compiled: verdicts, errors and defaults", () => {
    const precompiled = precompiledModule();
    const configs: unknown[] = [
      {},
      { settings: { port: 4000, host: "127.0.0.1" } },
      { settings: { port: "4000" } },
      { settings: { passwordHashCost: 4 }, unknown: true },
      { apps: [{ appId: "notes", config: { providers: { "anon-user": { enabled: true } } } }] },
      { apps: [{ config: {} }] },
      { apps: [{ appId: "bad id!" }] },
      { emailjsAccounts: [{ publicKey: "k", rateLimit: { perSecond: -1 } }] },
      [],
      null,
    ];
    const apps = state.apps as Record<string, unknown>[];
    const states: unknown[] = [
      state,
      { ...state, exportedAt: "yesterday" },
      { ...state, version: 2 },
      { ...state, format: undefined },
      { ...state, apps: "none" },
      { ...state, apps: [{ ...apps[0], users: [{}] }] },
      { ...state, mail: [{ to: 1 }] },
    ];
    const cases: [StartValidatorName, unknown][] = [
      ...configs.map((value): [StartValidatorName, unknown] => ["configFile", value]),
      ...states.map((value): [StartValidatorName, unknown] => ["state", value]),
    ];
    const verdicts = cases.map(([name, value]) => [
      name,
      verdict(precompiled.startValidator(name), value),
      verdict(startValidator(name), value),
    ]);
    for (const [name, ours, compiled] of verdicts) expect([name, ours]).toEqual([name, compiled]);
    // (Both kinds are met: the cases are not all valid, nor all refused.)
    const valid = verdicts.map(([, ours]) => (ours as { valid: boolean }).valid);
    expect(valid.filter(Boolean).length).toBeGreaterThanOrEqual(4);
    expect(valid.filter((v) => !v).length).toBeGreaterThanOrEqual(8);
  });

  it("are in the bundle as code: a start compiles none, and refuses a bad --config in the same words", async () => {
    await ensureBuilt();
    const bundle = readFileSync(join(import.meta.dirname, "../../dist/emulator.cjs"), "utf8");
    expect(bundle).toMatch(/function validate0\(/);
    expect(bundle).not.toContain("standaloneSource");
    const file = join(folder, "bad-config.json");
    writeFileSync(file, JSON.stringify({ settings: { port: "4000" } }));
    const { code, stderr } = await runCli(["--config", file, "--port", "0"]);
    expect(code).not.toBe(0);
    const [message] = verdict(startValidator("configFile"), { settings: { port: "4000" } }).errors;
    expect(stderr).toContain(`${file} is not a valid emulator configuration: ${message}`);
  });
});

describe("a --config file", () => {
  it("is refused when it names an app or an EmailJS account twice (which settings would hold?)", () => {
    expect(() => validateConfigFile({ apps: [{ appId: "a" }, { appId: "b" }, { appId: "a" }] }, "c.json")).toThrow(
      "c.json is not a valid emulator configuration: the configuration names the app 'a' twice",
    );
    expect(() => validateConfigFile({ emailjsAccounts: [{ publicKey: "k" }, { publicKey: "k" }] }, "c.json")).toThrow(
      "c.json is not a valid emulator configuration: the configuration names the EmailJS account 'k' twice",
    );
    // Accounts without a key get one each.
    expect(validateConfigFile({ emailjsAccounts: [{}, {}] }, "c.json").emailjsAccounts).toHaveLength(2);
  });

  it("is refused when an app's folder is not an export's root, and nothing is made", async () => {
    const app = await testApp();
    try {
      const apps = join(import.meta.dirname, "../../apps");
      const applied = applyConfigFile(
        app.emulator,
        { apps: [{ appId: "first" }, { appId: "foldered", appDir: "apps" }] },
        join(apps, ".."),
      );
      await expect(applied).rejects.toThrow(AppFolderError);
      await expect(applied).rejects.toThrow(
        `App folder ${apps} is not an App Services app export: it has no realm_config.json (${join(apps, "local-app")} has one)`,
      );
      expect(await app.emulator.apps.get("first")).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
