/**
 * Emulators as separate processes (the built bundle, dist/cli.js), for what one process cannot
 * show: several instances on one database, SIGKILL, restarts. The bundle is rebuilt when an input
 * changed (scripts/build.mjs), by one test file at a time (a lock directory), so parallel files never
 * read a half-written bundle.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, rmdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleIsFresh } from "../../scripts/build.mjs";
import { until } from "./until.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const cli = join(root, "dist", "cli.js");

/** Builds dist/cli.js when an input changed since the last build (one builder at a time). */
export async function ensureBuilt(): Promise<void> {
  if (bundleIsFresh()) return;
  const lock = join(tmpdir(), `emulator-build-lock-${createHash("sha256").update(root).digest("hex").slice(0, 12)}`);
  await until(
    () => {
      try {
        mkdirSync(lock);
        return true;
      } catch {
        return false;
      }
    },
    "the bundle lock",
    { timeoutMs: 60_000, everyMs: 50 },
  );
  try {
    if (!bundleIsFresh()) execFileSync(process.execPath, [join(root, "scripts", "build.mjs")], { stdio: "inherit" });
  } finally {
    rmdirSync(lock);
  }
}

export interface EmulatorProcess {
  child: ChildProcess;
  url: string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Everything it wrote to stdout so far (the start's banner). */
  stdout(): string;
  exited: Promise<number | null>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();

/** Kills every process started here that is still running (afterAll). */
export function killAll(): void {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

/** Starts `node dist/cli.js --port 0 … args` and waits until it answers its health check. */
export function startEmulatorProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<EmulatorProcess> {
  return startCliProcess(["--port", "0", "--no-watch", "--log-level", "error", ...args], env);
}

/** Starts the fake identity provider alone (`node dist/cli.js idp --port 0 … args`). */
export function startIdentityProviderProcess(args: string[]): Promise<EmulatorProcess> {
  return startCliProcess(["idp", "--port", "0", ...args], {});
}

async function startCliProcess(args: string[], env: NodeJS.ProcessEnv): Promise<EmulatorProcess> {
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  running.add(child);
  const exited = new Promise<number | null>((resolve) =>
    child.once("exit", (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  let output = "";
  let errors = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const url = await until(
    () => {
      if (child.exitCode !== null) throw new Error(`the emulator exited (${child.exitCode}): ${errors}`);
      return /listening on (https?:\/\/\S+)/.exec(output)?.[1];
    },
    "the emulator to print its address",
    { timeoutMs: 20_000 },
  );
  await until(async () => (await fetch(`${url}/_mock/v1/health`).catch(() => null))?.ok, "the health check", {
    timeoutMs: 20_000,
  });
  return {
    child,
    url,
    stderr: () => errors,
    stdout: () => output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Runs the CLI to its end (a refused start, an import): its exit code and output. */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  running.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  running.delete(child);
  return { code, stdout, stderr };
}
