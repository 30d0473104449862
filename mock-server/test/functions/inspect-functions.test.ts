/**
 * `--inspect-functions`: an app's function process waits for a debugger (the Chrome DevTools
 * protocol, as chrome://inspect and VS Code speak it); a breakpoint in a function's source stops
 * its call there, its arguments can be read, and the call answers when resumed — past the app's
 * time limit, which does not apply while debugging. Without it the process has no debugger.
 */
import type { FastifyInstance } from "fastify";
import { WebSocket } from "undici";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FunctionInspector } from "../../src/functions/function-inspector.ts";
import { functionProcessArgs } from "../../src/functions/sandbox.ts";
import { anonymousLogin, callAppFunction, newApp, testApp } from "../helpers/app.ts";
import { until } from "../helpers/until.ts";

/** A Chrome DevTools protocol session over a WebSocket: commands answered, events kept. */
class DevTools {
  private nextId = 1;
  private readonly answers = new Map<number, (message: Record<string, unknown>) => void>();
  readonly events: { method: string; params: Record<string, unknown> }[] = [];

  private constructor(private readonly socket: WebSocket) {
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as Record<string, unknown>;
      if (typeof message.id === "number") this.answers.get(message.id)?.(message);
      else this.events.push(message as { method: string; params: Record<string, unknown> });
    });
  }

  static async connect(url: string): Promise<DevTools> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve);
      socket.addEventListener("error", reject);
    });
    return new DevTools(socket);
  }

  async send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    const answer = new Promise<Record<string, unknown>>((resolve) => this.answers.set(id, resolve));
    this.socket.send(JSON.stringify({ id, method, params }));
    const message = await answer;
    if (message.error) throw new Error(JSON.stringify(message.error));
    return message.result as Record<string, unknown>;
  }

  event(method: string) {
    return until(() => this.events.find((e) => e.method === method), `the debugger's ${method}`, { timeoutMs: 10_000 });
  }

  close(): void {
    this.socket.close();
  }
}

const source = `exports = (n) => {
  const next = n + 1;
  return next;
};`;

describe("functions under a debugger", () => {
  let app: FastifyInstance;
  let appId: string;
  let token: string;
  beforeAll(async () => {
    app = await testApp({ allowFunctionSource: true, inspectFunctions: 0 });
    // A time limit a paused call would pass many times over.
    appId = await newApp(app, { functionTimeoutMs: 1, functions: { next: { source } } });
    token = (await anonymousLogin(app, appId)).access_token;
  });
  afterAll(() => app.close());

  it("stop a call at a breakpoint, read its arguments, and answer when resumed, with no time limit", async () => {
    const stderr = vi.spyOn(process.stderr, "write");
    expect((await callAppFunction(app, appId, token, "next", [1])).body).toEqual({ $numberInt: "2" });
    const url = await until(() => app.emulator.functionInspector?.debuggerUrl(appId), "the debugger's address");
    // The server says where to attach.
    const said = stderr.mock.calls.map(([text]) => String(text)).filter((text) => text.includes(appId));
    stderr.mockRestore();
    expect(said).toEqual([
      expect.stringMatching(new RegExp(`^functions of app '${appId}': a debugger may attach at 127\\.0\\.0\\.1:\\d+ `)),
    ]);
    const listed = (await (await fetch(`http://${new URL(url).host}/json/list`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    expect(listed.map((target) => target.webSocketDebuggerUrl)).toContain(url);

    const devtools = await DevTools.connect(url);
    try {
      await devtools.send("Debugger.enable");
      // The function's source is a script of its own name, line 1 its body's first statement.
      await until(
        () => devtools.events.some((e) => e.method === "Debugger.scriptParsed" && e.params.url === "functions/next.js"),
        "the function's script",
      );
      await devtools.send("Debugger.setBreakpointByUrl", { url: "functions/next.js", lineNumber: 1 });
      const call = callAppFunction(app, appId, token, "next", [41]);
      const paused = await devtools.event("Debugger.paused");
      const [frame] = paused.params.callFrames as { callFrameId: string; location: { lineNumber: number } }[];
      expect(frame!.location.lineNumber).toBe(1);
      const n = await devtools.send("Debugger.evaluateOnCallFrame", {
        callFrameId: frame!.callFrameId,
        expression: "n",
      });
      expect(n.result).toMatchObject({ type: "number", value: 41 });
      await devtools.send("Debugger.resume");
      const { response, body } = await call;
      expect(response.statusCode).toBe(200);
      expect(body).toEqual({ $numberInt: "42" });
    } finally {
      devtools.close();
    }
  });
});

describe("the function processes' debugger", () => {
  it("is off but with --inspect-functions: the permission model is on instead", () => {
    const plain = functionProcessArgs(64);
    expect(plain.some((arg) => arg.startsWith("--inspect"))).toBe(false);
    expect(plain.some((arg) => /^--(experimental-)?permission$/.test(arg))).toBe(true);
    const debugged = functionProcessArgs(64, 9229);
    expect(debugged).toContain("--inspect=127.0.0.1:9229");
    expect(debugged.some((arg) => /^--(experimental-)?permission$/.test(arg))).toBe(false);
  });

  it("gives each app a port of its own from the first on, the same each time", () => {
    const inspector = new FunctionInspector(9229, () => undefined);
    expect(["a", "b", "a", "c"].map((appId) => inspector.portOf(appId))).toEqual([9229, 9230, 9229, 9231]);
    expect(new FunctionInspector(0).portOf("a")).toBe(0);
  });
});
