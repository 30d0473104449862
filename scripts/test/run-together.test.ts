/**
 * `npm start`'s two processes side by side (scripts/run-together.mjs): each line of their output
 * under its name, the others stopped when one fails, all stopped on request.
 */
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { runTogether } from "../run-together.mjs";

/** A command running a line of JavaScript with this Node. */
const node = (name: string, code: string) => ({ name, command: process.execPath, args: ["-e", code] });

function collected() {
  const output = new PassThrough();
  let text = "";
  output.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { output, text: () => text };
}

describe("runTogether", () => {
  it("prefixes every line of each command's output and error output with its name, a last partial line too", async () => {
    const { output, text } = collected();
    const run = runTogether(
      [node("one", 'console.log("a\\nb"); console.error("c")'), node("two", 'process.stdout.write("partial")')],
      { output, color: false },
    );
    expect(await run.done).toBe(0);
    const lines = text().trimEnd().split("\n");
    expect(lines.filter((line) => line.startsWith("[one] ")).sort()).toEqual([
      "[one] a",
      "[one] b",
      "[one] c",
      "[one] exited with code 0",
    ]);
    expect(lines).toContain("[two] partial");
    // (Each command's exit is said too.)
    expect(lines).toContain("[two] exited with code 0");
  });

  it("stops the others when one fails, and ends with its exit code", async () => {
    const { output, text } = collected();
    const run = runTogether([node("lasting", "setInterval(() => {}, 1000)"), node("failing", "process.exit(3)")], {
      output,
      color: false,
    });
    expect(await run.done).toBe(3);
    expect(run.commands.every((command) => command.exited)).toBe(true);
    expect(text()).toContain("[lasting] exited on SIGTERM");
  });

  it("stops every command on request and ends with 0", async () => {
    const { output } = collected();
    const run = runTogether(
      [
        node("a", "setInterval(() => {}, 1000)"),
        node("b", 'process.on("SIGINT", () => process.exit(5)); setInterval(() => {}, 1000)'),
      ],
      { output, color: false },
    );
    // (Whatever each does on the signal — b exits 5 — a stop asked for ends with 0.)
    run.stop("SIGINT");
    expect(await run.done).toBe(0);
    expect(run.commands.every((command) => command.exited)).toBe(true);
  });

  it("colours the names when asked, and passes the environment it is given", async () => {
    const { output, text } = collected();
    const run = runTogether(
      [{ ...node("env", "console.log(process.env.GIVEN)"), env: { GIVEN: "yes" }, color: "cyan" as const }],
      { output, color: true },
    );
    expect(await run.done).toBe(0);
    expect(text()).toContain("\u001b[36m[env]\u001b[39m yes");
  });
});
