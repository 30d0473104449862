/**
 * Long work in slices: a request that has held the event loop for a few milliseconds lets the
 * others run before it goes on (a read of many documents, an insertMany of many), so one request
 * never keeps the rest waiting for more than a slice (docs/decisions/0018-fair-shares.md).
 *
 * The slice is shared: however many sliced tasks are under way — one request's walks beside its
 * stream's encoding, or a hundred users' wide finds — together they run for about a slice in a turn
 * of the event loop, one task after the other in the order they asked, and the network's callbacks
 * run between the turns. (With a slice each, three users' 24 counts of 20,000 documents at once
 * held every other client 145–187 ms at a time.)
 */

/** How long a slice holds the event loop. */
export const sliceMs = 4;

/** The tasks waiting for their next slice, in the order they asked. */
const waiting: (() => void)[] = [];
let granting = false;

/**
 * When the slice of this turn of the event loop began (undefined: none has yet): from the turn's
 * first sliced work, or from the grant. While tasks wait, work that starts once it is used up waits
 * its turn after one step; while none waits, a task goes on to its own slice's end.
 */
let shared: { started: number } | undefined;

function sliceStarted(): number {
  if (shared === undefined) startSlice();
  return shared!.started;
}

/** A slice from now on, ended by the next turn's immediates (whichever task it was given to). */
function startSlice(): void {
  const slice = { started: performance.now() };
  shared = slice;
  setImmediate(() => {
    if (shared === slice) shared = undefined;
  });
}

/** Gives the next waiting task the slice of this turn; the one after it waits for the next turn. */
function grant(): void {
  const next = waiting.shift();
  startSlice();
  if (waiting.length > 0) setImmediate(grant);
  else granting = false;
  next?.();
}

/** Waits until the others have had their turn and this task's slice comes (at least one turn). */
export function takeTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (granting) return;
    granting = true;
    setImmediate(grant);
  });
}

export class Turns {
  private started = performance.now();

  constructor() {
    sliceStarted();
  }

  /**
   * Gives the others a turn when this task's slice is used up, or when others wait and the turn's
   * shared slice is (reads the clock: call it every few items).
   */
  async maybe(): Promise<void> {
    const now = performance.now();
    if (now - this.started <= sliceMs && (waiting.length === 0 || now - sliceStarted() <= sliceMs)) return;
    await takeTurn();
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
