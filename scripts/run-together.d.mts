// Types for scripts/run-together.mjs (commands side by side, for `npm start`).

export interface TogetherCommand {
  /** Shown before each of its output lines, as `[name]`. */
  name: string;
  /** The executable, spawned without a shell. */
  command: string;
  args?: string[];
  cwd?: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
  /** The name's colour, where the output takes colours. */
  color?: "cyan" | "magenta" | "yellow" | "green" | "blue";
}

export interface RunningCommand {
  name: string;
  /** It has exited (or could not start). */
  exited: boolean;
  kill(signal: NodeJS.Signals): void;
}

export interface Together {
  commands: RunningCommand[];
  /** Once all have exited: the first failure's exit code (1 for a signal), or 0; 0 after `stop`. */
  done: Promise<number>;
  /** Sends every command the signal. */
  stop(signal: NodeJS.Signals): void;
}

export declare function runTogether(
  commands: TogetherCommand[],
  options?: { output?: NodeJS.WritableStream & { isTTY?: boolean }; color?: boolean },
): Together;
