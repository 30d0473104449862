/**
 * `--data-dir` against the built emulator: state survives a restart, and a `kill -9` in the middle of
 * a save leaves the previous state file whole and loadable (saves write a temporary file, sync it
 * and rename it). No sleeps: every wait is on a condition with a deadline.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, ensureBuilt } from "./helpers/emulator-process.ts";
import { expectFetchContract } from "./helpers/fetch-contract.ts";
import { seeded } from "./helpers/seeded.ts";
import { until } from "./helpers/until.ts";

let dataDir: string;
let randomDir: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  // The test runs the bundle: of the current sources.
  await ensureBuilt();
  dataDir = mkdtempSync(join(tmpdir(), "emulator-state-"));
  randomDir = mkdtempSync(join(tmpdir(), "emulator-kill-"));
}, 60_000);

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(randomDir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<void>;
}

async function start(dir = dataDir, extra: string[] = []): Promise<Running> {
  const args = [cli, "--data-dir", dir, "--port", "0", "--no-watch", "--log-level", "error", ...extra];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const url = await until(() => /listening on (http:\/\/\S+)/.exec(output)?.[1], "the emulator to print its address", {
    timeoutMs: 15_000,
  });
  await until(async () => (await fetch(`${url}/_mock/v1/health`).catch(() => null))?.ok, "the health check", {
    timeoutMs: 15_000,
  });
  return { child, url, exited };
}

async function control(url: string, operationId: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}/_mock/v1${path}`, {
    method,
    ...(body !== undefined ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) } : {}),
  });
  return {
    status: response.status,
    body: (await expectFetchContract(operationId, response)) as Record<string, unknown>,
  };
}

const documents = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => ({ n: from + i, text: `document ${from + i} `.padEnd(120, "x") }));

async function count(url: string): Promise<number> {
  const { body } = await control(url, "listDocuments", "GET", "/apps/crash-app/data/db/docs?limit=1");
  return body.total as number;
}

describe("state in --data-dir", () => {
  it("is saved on shutdown and loaded at start", async () => {
    const first = await start();
    expect((await control(first.url, "createApp", "POST", "/apps", { appId: "crash-app" })).status).toBe(201);
    expect(
      (
        await control(first.url, "insertDocuments", "POST", "/apps/crash-app/data/db/docs", {
          documents: documents(10, 0),
        })
      ).status,
    ).toBe(201);
    first.child.kill("SIGTERM");
    await first.exited;
    expect(first.child.exitCode).toBe(0);
    const saved = JSON.parse(readFileSync(join(dataDir, "state.json"), "utf8")) as { apps: { appId: string }[] };
    expect(saved.apps.map((a) => a.appId)).toContain("crash-app");

    const second = await start();
    expect(await count(second.url)).toBe(10);
    second.child.kill("SIGTERM");
    await second.exited;
  }, 60_000);

  it("saves changed state every --save-interval seconds, without waiting for the shutdown", async () => {
    const running = await start(dataDir, ["--save-interval", "0.2"]);
    const before = await count(running.url);
    await control(running.url, "insertDocuments", "POST", "/apps/crash-app/data/db/docs", {
      documents: documents(1, before),
    });
    // Well before the default 5 s: the periodic save of 0.2 s has written it.
    await until(
      () => {
        const saved = JSON.parse(readFileSync(join(dataDir, "state.json"), "utf8")) as {
          apps: { appId: string; collections: { collection: string; documents: unknown[] }[] }[];
        };
        const docs = saved.apps.find((a) => a.appId === "crash-app")?.collections.find((c) => c.collection === "docs");
        return docs?.documents.length === before + 1;
      },
      "the periodic save",
      { timeoutMs: 3_000, everyMs: 20 },
    );
    running.child.kill("SIGTERM");
    await running.exited;
  }, 30_000);

  it("survives kill -9 during a save: the file is the old state or the new one, never torn", async () => {
    const running = await start();
    const before = await count(running.url);
    expect(before).toBeGreaterThanOrEqual(10);
    // Enough data that writing it takes a while, so the kill lands inside the save.
    for (let i = 0; i < 4; i++) {
      const { status } = await control(running.url, "insertDocuments", "POST", "/apps/crash-app/data/db/docs", {
        documents: documents(25_000, before + i * 25_000),
      });
      expect(status).toBe(201);
    }
    let killedMidSave = false;
    const watcher = watch(dataDir, (_event, name) => {
      // The save has opened its temporary file: kill the process before it can rename it.
      if (name?.endsWith(".tmp") && running.child.exitCode === null && !killedMidSave) {
        killedMidSave = running.child.kill("SIGKILL");
      }
    });
    try {
      running.child.kill("SIGTERM"); // shutting down saves the state
      await running.exited;
    } finally {
      watcher.close();
    }
    expect(killedMidSave).toBe(true);
    expect(running.child.signalCode).toBe("SIGKILL");
    // The interrupted save left its temporary file; the state file is the previous, complete one.
    expect(readdirSync(dataDir).some((name) => name.endsWith(".tmp"))).toBe(true);
    const onDisk = JSON.parse(readFileSync(join(dataDir, "state.json"), "utf8")) as {
      format: string;
      apps: { appId: string; collections: { collection: string; documents: unknown[] }[] }[];
    };
    expect(onDisk.format).toBe("app-services-harness-state");
    // The last complete save (at the previous shutdown, or a periodic one between the inserts).
    const savedDocs = onDisk.apps.find((a) => a.appId === "crash-app")?.collections.find((c) => c.collection === "docs")
      ?.documents.length;
    expect([0, 1, 2, 3, 4].map((i) => before + i * 25_000)).toContain(savedDocs);

    const restarted = await start();
    expect(await count(restarted.url)).toBe(savedDocs);
    // Loading removed the leftovers of the interrupted save.
    expect(readdirSync(dataDir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
    expect(existsSync(join(dataDir, "state.json"))).toBe(true);
    restarted.child.kill("SIGTERM");
    await restarted.exited;
  }, 90_000);

  it("restarts with a loadable state whatever moment of a save a SIGKILL lands in (seeded rounds)", async () => {
    const random = seeded(20261122);
    const docsIn = (file: string) => {
      const state = JSON.parse(readFileSync(file, "utf8")) as {
        format: string;
        apps: { appId: string; collections: { collection: string; documents: unknown[] }[] }[];
      };
      expect(state.format).toBe("app-services-harness-state");
      return (
        state.apps.find((a) => a.appId === "crash-app")?.collections.find((c) => c.collection === "docs")?.documents
          .length ?? 0
      );
    };
    const first = await start(randomDir);
    expect((await control(first.url, "createApp", "POST", "/apps", { appId: "crash-app" })).status).toBe(201);
    first.child.kill("SIGTERM");
    await first.exited;
    let saved = 0;
    const outcomes: string[] = [];
    // The round whose kill lands in a periodic save rather than the one at shutdown.
    const periodicRound = 3;
    // Each stage of a save twice, in a seeded order.
    const stages = [0, 1, 2, 3, 0, 1, 2, 3]
      .map((stage) => ({ stage, order: random() }))
      .sort((a, b) => a.order - b.order)
      .map((s) => s.stage);
    // Each round's restarted emulator (its state checked) is the next round's running one.
    let running = await start(randomDir);
    for (const [round, stage] of stages.entries()) {
      // The signal follows a file event the test hears a little late: a save at shutdown may be done,
      // and the emulator gone on its own, before it lands. Such a round killed nothing; it must have
      // kept the whole new save, and it is played again (a few times at most) until a kill lands.
      for (let attempt = 1; ; attempt++) {
        expect(await count(running.url)).toBe(saved);
        // A save of a different size every round, so the kill lands at different points of it.
        const batch = 1_000 + Math.floor(random() * 6_000);
        const { status } = await control(running.url, "insertDocuments", "POST", "/apps/crash-app/data/db/docs", {
          documents: documents(batch, saved),
        });
        expect(status).toBe(201);
        // The save's file events: the temporary file created, written, renamed over the state file. Kill
        // at one of them (the signal lands a little later, somewhere in the save).
        let events = 0;
        let killed = false;
        const watcher = watch(randomDir, () => {
          if (!killed && events++ === stage) killed = running.child.kill("SIGKILL");
        });
        const ended = () => running.child.exitCode !== null || running.child.signalCode !== null;
        try {
          // One round interrupts a periodic save, the others the one at shutdown.
          if (round !== periodicRound) running.child.kill("SIGTERM");
          else {
            // The watcher may hear a save's file events coalesced, fewer than the stage's: then the
            // periodic save killed nothing, and none follows it (the state no longer changes). Once
            // it is on disk and the emulator still runs, a SIGTERM ends the round, played again.
            const file = join(randomDir, "state.json");
            await until(() => ended() || docsIn(file) === saved + batch, "the periodic save, or the kill", {
              timeoutMs: 20_000,
              everyMs: 20,
            });
            if (!ended() && !killed) running.child.kill("SIGTERM");
          }
          await until(ended, "the emulator to end", { timeoutMs: 20_000, everyMs: 20 });
          await running.exited;
        } finally {
          watcher.close();
        }
        // Whatever the moment: the state file is whole, either the last complete save or the new one.
        const onDisk = docsIn(join(randomDir, "state.json"));
        expect([saved, saved + batch]).toContain(onDisk);
        const landed = running.child.signalCode === "SIGKILL";
        if (!landed) {
          // Ended by its SIGTERM before the kill: a clean exit with the whole new save.
          expect(running.child.exitCode).toBe(0);
          expect(onDisk).toBe(saved + batch);
          expect(attempt, `no kill landed in stage ${stage} in ${attempt} tries`).toBeLessThan(5);
        } else outcomes.push(`stage ${stage}: ${onDisk === saved ? "old" : "new"}`);
        // The next round's emulator (the periodic one's) saves every 0.2 s, not every 5 s: no long wait.
        const next = landed ? round + 1 : round;
        running = await start(randomDir, next === periodicRound ? ["--save-interval", "0.2"] : []);
        expect(await count(running.url)).toBe(onDisk);
        expect(readdirSync(randomDir).filter((name) => name.endsWith(".tmp"))).toEqual([]);
        saved = onDisk;
        if (landed) break;
      }
    }
    running.child.kill("SIGTERM");
    await running.exited;
    // Early kills keep the previous state; late ones find the new one already in place.
    expect(
      outcomes.some((o) => o.endsWith("old")),
      outcomes.join(", "),
    ).toBe(true);
  }, 120_000);
});
