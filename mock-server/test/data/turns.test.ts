import { describe, expect, it } from "vitest";
import { inSlices, inTurns, sliceMs, Turns, takeTurn } from "../../src/data/turns.ts";

/** Keeps the thread busy for `ms` (a step of sliced work). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * Which tasks made steps in each turn of the event loop: an observer that schedules itself once a
 * turn (as every recurring immediate does) closes a turn each time it runs.
 */
function turnsObserved() {
  const turns: Set<string>[] = [new Set()];
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    turns.push(new Set());
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stepOf: (task: string) => turns.at(-1)!.add(task),
    stop: () => {
      stopped = true;
      return turns.filter((turn) => turn.size > 0);
    },
  };
}

describe("sliced work on the main thread", () => {
  it("lets one task at a time run its slice in a turn of the event loop, however many are under way", async () => {
    const observed = turnsObserved();
    const task = (name: string) =>
      inTurns(
        (function* () {
          for (let step = 0; step < 40; step++) {
            busy(0.5);
            observed.stepOf(name);
            yield;
          }
          return name;
        })(),
      );
    const names = ["a", "b", "c", "d", "e", "f"];
    expect(await Promise.all(names.map(task))).toEqual(names);
    const turns = observed.stop();
    // The first turn is the one they all started in; after it, each turn runs one task's slice
    // (without the shared slice, every task ran a slice in every turn: 6 × 4 ms a turn).
    expect(Math.max(...turns.slice(1).map((turn) => turn.size))).toBe(1);
    expect(turns.length).toBeGreaterThan(names.length);
  });

  it("gives the waiting tasks their slices in the order they asked, so none is left behind", async () => {
    const granted: string[] = [];
    const task = async (name: string) => {
      const turns = new Turns();
      for (let slice = 0; slice < 3; slice++) {
        busy(sliceMs + 1);
        await turns.maybe();
        granted.push(name);
      }
    };
    await Promise.all(["a", "b", "c"].map(task));
    expect(granted).toEqual(["a", "b", "c", "a", "b", "c", "a", "b", "c"]);
  });

  it("shares one slice among every kind of sliced work: items, steps and turns taken outright", async () => {
    const observed = turnsObserved();
    const items = Array.from({ length: 4096 }, (_, i) => i);
    await Promise.all([
      inSlices(items, () => {
        busy(0.01);
        observed.stepOf("items");
      }),
      inTurns(
        (function* () {
          for (let step = 0; step < 80; step++) {
            busy(0.5);
            observed.stepOf("steps");
            yield;
          }
        })(),
      ),
      (async () => {
        for (let slice = 0; slice < 20; slice++) {
          busy(2);
          observed.stepOf("outright");
          await takeTurn();
        }
      })(),
    ]);
    const turns = observed.stop();
    expect(Math.max(...turns.slice(1).map((turn) => turn.size))).toBe(1);
  });

  it("keeps a short task in its turn while none waits, whatever else the turn did", async () => {
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    new Turns(); // sliced work began in this turn…
    busy(sliceMs + 2); // …and the turn went on with other work
    const steps = await inTurns(
      (function* () {
        let count = 0;
        for (; count < 3; count++) yield;
        return count;
      })(),
    );
    expect(steps).toBe(3);
    expect(turned).toBe(false);
  });

  it("runs a lone task as before: a slice a turn, other callbacks between", async () => {
    const observed = turnsObserved();
    let timers = 0;
    const timer = setInterval(() => timers++, 0);
    await inTurns(
      (function* () {
        for (let step = 0; step < 60; step++) {
          busy(0.5);
          observed.stepOf("alone");
          yield;
        }
      })(),
    );
    clearInterval(timer);
    const turns = observed.stop();
    // 30 ms of steps in slices of ~4 ms: several turns, and timers ran between them.
    expect(turns.length).toBeGreaterThanOrEqual(4);
    expect(timers).toBeGreaterThan(0);
  });
});
