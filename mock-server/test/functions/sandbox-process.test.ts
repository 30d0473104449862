/**
 * The second wall (docs/decisions/0010): each app's functions run in a Node process of their own,
 * under Node's permission model, with no string compilation and none of the emulator's
 * environment, so that code which got out of the `node:vm` context would still find no file
 * system, no commands and nothing of the emulator. Driven without HTTP: the sandbox is a plain class.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Writable } from "node:stream";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { FunctionSource } from "../../src/functions/function-folder.ts";
import { networkLockdown, workerSource } from "../../src/functions/function-worker.ts";
import {
  builtinPackageDirs,
  contextLimits,
  ExecutionMemoryLimit,
  ExecutionTimeout,
  functionProcessArgs,
  functionProcessEnvironment,
  Sandbox,
} from "../../src/functions/sandbox.ts";
import { refusingHost, testAppInfo } from "../helpers/sandbox.ts";

const host = refusingHost;
const info = testAppInfo("process-test");
const fn = (name: string, source: string): FunctionSource => ({
  name,
  source,
  private: false,
  runAsSystem: false,
  origin: "config",
  version: `test:${name}`,
});
const sandboxes: Sandbox[] = [];
const sandbox = (memoryLimitMb?: number) => {
  const created = new Sandbox(host, info, { memoryLimitMb });
  sandboxes.push(created);
  return created;
};
afterAll(() => {
  for (const s of sandboxes) s.close();
});

const run = (s: Sandbox, f: FunctionSource, args: unknown[] = [], timeoutMs = 10_000) =>
  s.run({
    fn: f,
    argsText: JSON.stringify(args),
    callText: '{"user":{},"request":{}}',
    deadline: Date.now() + timeoutMs,
  }).result;

/**
 * Runs code as if it had got out of the context: in a process started like a function process
 * (its flags and environment), answering with what it printed as JSON.
 */
async function runEscaped(code: string): Promise<unknown> {
  const child = spawn(process.execPath, [...functionProcessArgs(64).slice(0, -2), "-e", code], {
    env: functionProcessEnvironment(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  await new Promise((resolve) => child.on("close", resolve));
  return JSON.parse(stdout);
}

describe("the function process", () => {
  it.runIf(existsSync("/proc/self/cmdline"))(
    "is a process of its own, under the permission model, without string compilation or environment",
    async () => {
      process.env.SANDBOX_TEST_SECRET = "the emulator's secret";
      let s: Sandbox;
      try {
        s = sandbox();
      } finally {
        delete process.env.SANDBOX_TEST_SECRET;
      }
      expect(await run(s, fn("sum", "exports = (...n) => n.reduce((a, b) => a + b, 0);"), [1, 2, 3])).toBe(
        '{"$numberInt":"6"}',
      );
      const pid = s.pid!;
      expect(pid).not.toBe(process.pid);
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\u0000");
      expect(args).toContain("--disallow-code-generation-from-strings");
      expect(args.some((a) => a === "--permission" || a === "--experimental-permission")).toBe(true);
      // Reading: only the built-in modules' packages (an app without node_modules).
      expect(args.filter((a) => a.startsWith("--allow-"))).toEqual(
        builtinPackageDirs().map((dir) => `--allow-fs-read=${join(dir, "*")}`),
      );
      // (Packages only: each a folder of a node_modules, none this project's own.)
      expect(
        builtinPackageDirs().every(
          (dir) => basename(dirname(dir)) === "node_modules" || basename(dirname(dirname(dir))) === "node_modules",
        ),
      ).toBe(true);
      expect(builtinPackageDirs().some((dir) => dir.startsWith(join(import.meta.dirname, "..", "..", "src")))).toBe(
        false,
      );
      // Nothing of the emulator's environment (its secrets): the time zone and locale at most.
      const names = readFileSync(`/proc/${pid}/environ`, "utf8")
        .split("\u0000")
        .filter(Boolean)
        .map((entry) => entry.slice(0, entry.indexOf("=")));
      expect(names.filter((name) => !/^(TZ|LANG|LC_ALL)$/.test(name))).toEqual([]);
    },
  );

  it("runs functions in UTC and en-US, as the service does, whatever the emulator's time zone and locale", async () => {
    const kept = { TZ: process.env.TZ, LANG: process.env.LANG, LC_ALL: process.env.LC_ALL };
    Object.assign(process.env, { TZ: "Asia/Kolkata", LANG: "sv_SE.UTF-8", LC_ALL: "sv_SE.UTF-8" });
    let answer: string;
    try {
      const clock = fn(
        "clock",
        `exports = () => [new Date(0).getHours(), new Date(0).toString(), Intl.DateTimeFormat().resolvedOptions().timeZone,
          Intl.DateTimeFormat().resolvedOptions().locale, ["b", "ä", "z"].sort((a, b) => a.localeCompare(b))];`,
      );
      answer = await run(sandbox(), clock);
    } finally {
      for (const [name, value] of Object.entries(kept)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(JSON.parse(answer)).toEqual([
      { $numberInt: "0" },
      "Thu Jan 01 1970 00:00:00 GMT+0000 (Coordinated Universal Time)",
      "UTC",
      "en-US",
      ["ä", "b", "z"],
    ]);
  });

  it("denies code that got out of the context the file system, commands, workers, eval and the environment", async () => {
    const dir = mkdtempSync(join(tmpdir(), "function-process-"));
    try {
      const escaped = `
        const out = {};
        const attempt = (name, f) => { try { f(); out[name] = "allowed"; } catch (error) { out[name] = "denied"; } };
        attempt("read a file", () => require("node:fs").readFileSync(${JSON.stringify(import.meta.filename)}));
        attempt("write a file", () => require("node:fs").writeFileSync(${JSON.stringify(join(dir, "written"))}, "x"));
        attempt("run a command", () => require("node:child_process").execFileSync("true"));
        attempt("start a worker", () => new (require("node:worker_threads").Worker)("1", { eval: true }));
        attempt("internal bindings", () => process.binding("fs"));
        attempt("native addons", () => process.dlopen({ exports: {} }, "/nonexistent.node"));
        attempt("Function from a string", () => Function("return process")());
        attempt("eval", () => eval("process"));
        out.environment = Object.keys(process.env).filter((name) => !["TZ", "LANG", "LC_ALL"].includes(name));
        process.stdout.write(JSON.stringify(out));
      `;
      expect(await runEscaped(escaped)).toEqual({
        "read a file": "denied",
        "write a file": "denied",
        "run a command": "denied",
        "start a worker": "denied",
        "internal bindings": "denied",
        "native addons": "denied",
        "Function from a string": "denied",
        eval: "denied",
        environment: [],
      });
      expect(existsSync(join(dir, "written"))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("denies code that got out of the context the network: connections, servers, datagrams, DNS", async () => {
    // A server on this host that code in a function process must not reach (as the database or
    // the emulator itself would be).
    let connections = 0;
    const server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const escaped = `
        const out = {};
        const settle = (promise) => promise.then(() => "allowed", () => "denied");
        const attempt = (f) => { try { const r = f(); return r && typeof r.then === "function" ? settle(r) : "allowed"; } catch { return "denied"; } };
        const net = process.getBuiltinModule("node:net");
        (async () => {
          out["net.connect"] = await attempt(() => net.connect(${port}, "127.0.0.1"));
          out["a socket's connect"] = await attempt(() => new net.Socket().connect(${port}, "127.0.0.1"));
          out["http.get"] = await attempt(() => process.getBuiltinModule("node:http").get("http://127.0.0.1:${port}/"));
          out["tls.connect"] = await attempt(() => process.getBuiltinModule("node:tls").connect(${port}, "127.0.0.1"));
          out.fetch = await attempt(() => fetch("http://127.0.0.1:${port}/"));
          out["a server"] = await attempt(() => net.createServer().listen(0, "127.0.0.1"));
          out.datagram = await attempt(() => process.getBuiltinModule("node:dgram").createSocket("udp4").send("x", ${port}, "127.0.0.1"));
          out["dns.lookup"] = await attempt(() => process.getBuiltinModule("node:dns").lookup("localhost", () => undefined));
          out["dns.resolve4"] = await attempt(() => process.getBuiltinModule("node:dns").promises.resolve4("localhost"));
          out["a resolver"] = await attempt(() => new (process.getBuiltinModule("node:dns").Resolver)().resolve4("localhost", () => undefined));
          out["put connect back"] = await attempt(() => Object.defineProperty(net.Socket.prototype, "connect", { value() {} }));
          process.stdout.write(JSON.stringify(out));
          process.exit(0);
        })();
      `;
      expect(await runEscaped(`${networkLockdown}\n${escaped}`)).toEqual({
        "net.connect": "denied",
        "a socket's connect": "denied",
        "http.get": "denied",
        "tls.connect": "denied",
        fetch: "denied",
        "a server": "denied",
        datagram: "denied",
        "dns.lookup": "denied",
        "dns.resolve4": "denied",
        "a resolver": "denied",
        "put connect back": "denied",
      });
      expect(connections).toBe(0);
      // Every function process runs it first.
      expect(workerSource).toContain(networkLockdown);
    } finally {
      server.close();
    }
  });

  it("ends when its emulator goes away (no process is left behind)", async () => {
    const child = spawn(process.execPath, functionProcessArgs(64), {
      env: {},
      stdio: ["ignore", "ignore", "ignore", "pipe"],
    });
    await new Promise((resolve) => child.once("spawn", resolve));
    // Its channel closes: the emulator exited or was killed.
    (child.stdio[3] as Writable).end();
    expect(await new Promise((resolve) => child.on("exit", (code) => resolve(code)))).toBe(0);
  });

  it("reads frames split anywhere, and ends a process that sends a broken or oversized one", async () => {
    // Frames are read as they arrive: here fed by hand, as the process's pipe could cut them.
    const read = (s: Sandbox, chunk: string) => (s as unknown as { read(chunk: string): void }).read(chunk);
    const waits = fn("waits", "exports = () => new Promise(() => {});");
    const s = sandbox();
    const { callId, result } = s.run({
      fn: waits,
      argsText: "[]",
      callText: '{"user":{},"request":{}}',
      deadline: Date.now() + 10_000,
    });
    const text = `done,${callId},0,"héllo ✓ 😀"`;
    const framed = `${text.length}:${text}`;
    for (const piece of [framed.slice(0, 1), framed.slice(1, 9), framed.slice(9, -3), framed.slice(-3)]) read(s, piece);
    expect(await result).toBe('"héllo ✓ 😀"');
    for (const broken of ["12x:", "-5:", "99999999999:", `${"1".repeat(12)}:`]) {
      const victim = sandbox();
      const pending = run(victim, waits);
      read(victim, broken);
      await expect(pending, broken).rejects.toThrow("it sent a broken message");
      expect(victim.usable, broken).toBe(false);
    }
  });

  it("gives every call its own context, past the contexts a process keeps and after a huge one", async () => {
    // Each distinct context crosses once and calls name it by id; past the limits both sides forget
    // them all, in order with the calls already on their way.
    const s = sandbox();
    const who = fn("who", "exports = () => [context.user.id, context.user.custom_data.note.length];");
    const huge = "n".repeat(contextLimits.chars + 10);
    const contextOf = (id: string) =>
      JSON.stringify({ user: { id, custom_data: { note: id === "huge" ? huge : "" } }, request: {} });
    const callAll = (ids: string[]) =>
      Promise.all(
        ids.map((id) =>
          s
            .run({ fn: who, argsText: "[]", callText: contextOf(id), deadline: Date.now() + 20_000 })
            .result.then((text) => {
              expect(JSON.parse(text), id).toEqual([id, { $numberInt: String(id === "huge" ? huge.length : 0) }]);
            }),
        ),
      );
    const users = Array.from({ length: contextLimits.count * 2 + 7 }, (_, i) => `user-${i}`);
    const first = users.slice(0, contextLimits.count - 3);
    await callAll(first);
    // Known contexts named by id, then enough new ones to pass the limit twice (and a huge one),
    // then the first ones again: all sent in one turn.
    await callAll([...first.slice(0, 40), ...users.slice(first.length), "huge", ...first.slice(0, 40), "huge"]);
  }, 30_000);

  it("sends the calls of two turns of the event loop in one write (one wake-up of the process)", async () => {
    const s = sandbox();
    const echo = fn("echo", "exports = (n) => n;");
    expect(await run(s, echo, [0])).toBe('{"$numberInt":"0"}');
    const channel = (s as unknown as { channel: { write: (chunk: string) => boolean } }).channel;
    const write = vi.spyOn(channel, "write");
    const first = run(s, echo, [1]);
    const second = new Promise<string>((resolve) => setImmediate(() => resolve(run(s, echo, [2]))));
    expect(await Promise.all([first, second])).toEqual(['{"$numberInt":"1"}', '{"$numberInt":"2"}']);
    expect(write).toHaveBeenCalledTimes(1);
    write.mockRestore();
  });

  it("fails each call at its own deadline, an earlier one made after a later one included", async () => {
    const s = sandbox();
    const waits = fn("waits", "exports = () => new Promise(() => {});");
    const quick = fn("quick", "exports = (n) => n;");
    // The process is started first: its start-up (slow on a busy machine) is not what is measured.
    expect(await run(s, quick, [0])).toBe('{"$numberInt":"0"}');
    const settled = (promise: Promise<string>) =>
      promise.then(
        () => ({ at: Date.now(), error: null }),
        (error: Error) => ({ at: Date.now(), error }),
      );
    const started = Date.now();
    const late = settled(run(s, waits, [], 1_000));
    const early = settled(run(s, waits, [], 150));
    // A call that finishes in time is not failed by the deadline of others.
    expect(await run(s, quick, [7], 150)).toBe('{"$numberInt":"7"}');
    const first = await early;
    expect(first.error).toBeInstanceOf(ExecutionTimeout);
    expect(first.at - started).toBeLessThan(800);
    // The process only waits (it answers the ping): the later call keeps its own deadline.
    await expect.poll(() => s.running, { timeout: 2_000 }).toBe(1);
    expect((await late).error).toBeInstanceOf(ExecutionTimeout);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  }, 20_000);

  it("counts a call's time from the end of the process's start-up, which is the emulator's", async () => {
    // The clock of timers jumps 5 s at once, long before the process can have started: a call's
    // time limit of 100 ms has not begun, and the call answers once the process is ready.
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    try {
      const s = sandbox();
      const answered = run(s, fn("quick", "exports = (n) => n;"), [1], 100);
      vi.advanceTimersByTime(5_000);
      expect(await answered).toBe('{"$numberInt":"1"}');
    } finally {
      vi.useRealTimers();
    }
  });

  it("ends a process that does not start within 30 s, failing its calls", async () => {
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout"] });
    try {
      const s = sandbox();
      const answered = run(s, fn("quick", "exports = (n) => n;"), [1], 100);
      vi.advanceTimersByTime(30_000);
      await expect(answered).rejects.toThrow("the functions' process failed: it did not start");
      expect(s.usable).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it("fails a call with ExecutionMemoryLimit when the process runs out of memory, and the next call gets a new one", async () => {
    const s = sandbox(48);
    const greedy = fn(
      "greedy",
      "exports = () => { const kept = []; for (;;) kept.push(new Array(100000).fill(1.5)); };",
    );
    await expect(run(s, greedy, [], 60_000)).rejects.toBeInstanceOf(ExecutionMemoryLimit);
    expect(s.usable).toBe(false);
    const fresh = sandbox(48);
    expect(await run(fresh, fn("one", "exports = () => 1;"))).toBe('{"$numberInt":"1"}');
  }, 70_000);
});
