/**
 * Long work in slices: a request that has held the event loop for a few milliseconds lets the
 * others run before it goes on (a read of many documents, an insertMany of many), so one request
 * never keeps the rest waiting for more than a slice (docs/decisions/0018-fair-shares.md).
 */
import { setImmediate as nextTurn } from "node:timers/promises";

/** How long a slice holds the event loop. */
export const sliceMs = 4;

export class Turns {
  private started = performance.now();

  /** Gives the others a turn when this slice is used up (reads the clock: call it every few items). */
  async maybe(): Promise<void> {
    if (performance.now() - this.started <= sliceMs) return;
    await nextTurn();
    this.started = performance.now();
  }
}

/** Runs `each` over `items` in slices, giving the others a turn between them. */
export async function inSlices<T>(items: readonly T[], each: (item: T, index: number) => void): Promise<void> {
  const turns = new Turns();
  for (let i = 0; i < items.length; i++) {
    each(items[i]!, i);
    if ((i & 63) === 63) await turns.maybe();
  }
}

/** Runs steps (a generator that yields between them) to their end at once. */
export function finish<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs steps to their end, giving the others a turn once a slice is used up. */
export async function inTurns<T>(steps: Generator<void, T>): Promise<T> {
  const turns = new Turns();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await turns.maybe();
  }
}
