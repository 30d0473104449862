// Commands side by side, as `npm start` runs the emulator and the web app's dev server: each line
// of their output (and error output) under the command's name, the others stopped when one ends
// in failure, every one stopped on request. Spawned at once, without a shell; the concurrently
// package did this at `npm start`'s start for 120 ms of loading before it spawned anything.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

const colors = { cyan: 36, magenta: 35, yellow: 33, green: 32, blue: 34 };

/**
 * Starts `commands` ({ name, command, args, cwd?, env?, color? }) and answers `{ commands, done,
 * stop }`: `done` resolves, once all have exited, with the exit code of the first that failed
 * (1 for one ended by a signal) or 0 — and 0 whatever they did after `stop(signal)` was asked.
 */
export function runTogether(
  commands,
  { output = process.stdout, color = Boolean(output.isTTY) && !process.env.NO_COLOR } = {},
) {
  let stopping = false;
  let failure = 0;
  const running = commands.map((spec) => {
    const prefix = color && spec.color ? `\u001b[${colors[spec.color]}m[${spec.name}]\u001b[39m ` : `[${spec.name}] `;
    const say = (line) => output.write(`${prefix}${line}\n`);
    const child = spawn(spec.command, spec.args ?? [], {
      cwd: spec.cwd,
      env: { ...process.env, ...(color ? { FORCE_COLOR: "1" } : {}), ...spec.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const entry = { name: spec.name, child, exited: false, kill: (signal) => entry.exited || child.kill(signal) };
    const streams = [child.stdout, child.stderr].map((stream) => {
      const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
      lines.on("line", say);
      return new Promise((resolve) => lines.once("close", resolve));
    });
    entry.finished = new Promise((resolve) => {
      child.once("error", (error) => {
        say(`could not start: ${error.message}`);
        entry.exited = true;
        resolve(127);
      });
      child.once("exit", (code, signal) => {
        entry.exited = true;
        // The last lines first (a partial one included), then the exit.
        void Promise.all(streams).then(() => {
          say(signal ? `exited on ${signal}` : `exited with code ${code}`);
          resolve(signal ? 1 : code);
        });
      });
    }).then((code) => {
      if (code !== 0 && !stopping && failure === 0) {
        failure = code;
        stop("SIGTERM");
      }
      return code;
    });
    return entry;
  });
  function stop(signal) {
    if (failure === 0) stopping = true;
    for (const entry of running) entry.kill(signal);
  }
  const done = Promise.all(running.map((entry) => entry.finished)).then(() => (stopping ? 0 : failure));
  return { commands: running, done, stop };
}
