/**
 * The web build's check for the local harness's values (web/scripts/check-no-harness-defaults.mjs,
 * run by `npm run build -w web`): a build given no VITE_ variable is the harness's own; one given
 * every variable carries none of the harness's values; one given some but not all fails, naming
 * the missing ones (a deployment that set only the server's URL and app id, as the production guide
 * once said, posted its contact form to the visitor's own 127.0.0.1:4000).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const web = join(import.meta.dirname, "..", "..", "web");
const defaults = JSON.parse(readFileSync(join(web, "src/config/harness-defaults.json"), "utf8")) as Record<
  string,
  string
>;
const dist = mkdtempSync(join(tmpdir(), "web-build-check-"));
afterAll(() => rmSync(dist, { recursive: true, force: true }));

function check(variables: Record<string, string>) {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "", BUILD_MODE: "build-check-test", ...variables };
  return spawnSync(process.execPath, [join(web, "scripts/check-no-harness-defaults.mjs"), dist], {
    env,
    encoding: "utf8",
    timeout: 20_000,
  });
}

const every = Object.fromEntries(Object.keys(defaults).map((name) => [name, `deployment-${name.toLowerCase()}`]));

describe("the web build's check for harness values", () => {
  it("passes a build given no variable: the local harness's own", () => {
    const { status, stdout } = check({});
    expect(status).toBe(0);
    expect(stdout).toContain("A build for the local harness");
  });

  it("fails a build given some variables but not all, naming the missing ones", () => {
    const { status, stderr } = check({
      VITE_APP_SERVICES_BASE_URL: "https://api.example.com",
      VITE_APP_SERVICES_APP_ID: "notes-abcde",
    });
    expect(status).toBe(1);
    expect(stderr).toContain("VITE_EMAILJS_ORIGIN, VITE_EMAILJS_PUBLIC_KEY");
    expect(stderr).not.toContain("VITE_APP_SERVICES_BASE_URL");
  });

  it("passes a build given every variable whose files hold no harness value, and fails one that does", () => {
    writeFileSync(join(dist, "index.js"), 'const config = {"base":"https://api.example.com"};');
    expect(check(every).status).toBe(0);
    writeFileSync(join(dist, "index.js"), `const config = {"origin":"${defaults.VITE_EMAILJS_ORIGIN}"};`);
    const { status, stderr } = check(every);
    expect(status).toBe(1);
    expect(stderr).toContain("VITE_EMAILJS_ORIGIN's harness value");
  });
});
