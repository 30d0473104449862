/**
 * `--inspect-functions PORT` (the harness only): each app's function process listens for a
 * debugger — Chrome's `chrome://inspect`, VS Code's "attach" — on 127.0.0.1, the first app to run
 * a function on PORT, the next on PORT + 1 and so on, each app keeping its port across restarts of
 * its process (a debugger attached by port finds it again). Breakpoints and `debugger;` statements
 * then stop a function where its source says (`functions/<name>.js`).
 *
 * A process being debugged runs without Node's permission model (it keeps the inspector from
 * starting), so the function's code could read the host's files if it got out of its context:
 * never in production. And as a function may stand at a breakpoint for as long as its developer
 * looks, calls have no time limit and the process is not stopped as stuck or idle meanwhile.
 */
export class FunctionInspector {
  /** A call's time limit while debugging: none worth the name (a day). */
  static readonly timeLimitMs = 24 * 60 * 60 * 1000;
  private readonly ports = new Map<string, number>();
  private readonly urls = new Map<string, string>();

  constructor(
    /** The first app's port; 0: any free port for each process (tests). */
    private readonly basePort: number,
    /** Where "debug app X at …" is said (the server's stderr). */
    private readonly announce: (line: string) => void = (line) => void process.stderr.write(`${line}\n`),
  ) {}

  /** The port an app's function process listens on for a debugger. */
  portOf(appId: string): number {
    if (this.basePort === 0) return 0;
    let port = this.ports.get(appId);
    if (port === undefined) {
      port = this.basePort + this.ports.size;
      this.ports.set(appId, port);
    }
    return port;
  }

  /** An app's function process is listening for a debugger at `url` (its WebSocket address). */
  listening(appId: string, url: string): void {
    this.urls.set(appId, url);
    const address = /^ws:\/\/([^/]+)\//.exec(url)?.[1] ?? url;
    this.announce(`functions of app '${appId}': a debugger may attach at ${address} (chrome://inspect; ${url})`);
  }

  /** Where the debugger of an app's function process attaches, once the process listens. */
  debuggerUrl(appId: string): string | undefined {
    return this.urls.get(appId);
  }
}
