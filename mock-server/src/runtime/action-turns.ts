/**
 * Each caller's MongoDB actions from clients take turns on an instance (decision 0018): at most
 * `running` at once, more waiting in arrival order up to `waiting`. What the actions share — the
 * main thread's slices, the database's connections — is then shared among callers rather than
 * among requests: one user's burst of a hundred actions stands in its own line instead of ahead
 * of everyone else's. A turn is taken before the action starts (its time limit runs from then).
 */

/** What tells that a waiting action's client left (its response, which closes then). */
export interface Leaving {
  once(event: "close", listener: () => void): unknown;
  off(event: "close", listener: () => void): unknown;
}

/** Turns of one caller: how many run, and the waiting ones' starts in arrival order. */
interface Line {
  running: number;
  waiting: (() => void)[];
}

export interface TurnLimits {
  running: number;
  waiting: number;
}

export class ActionTurns {
  private readonly lines = new Map<string, Line>();

  /**
   * A turn for `key`: at once (the function that ends it; call it once, however the action ends),
   * later (a promise of it), or null when `waiting` of the caller's actions wait already. A waiting
   * turn whose `client` closes meanwhile (the client left) gives its place up: its promise answers
   * null, and the action never runs.
   */
  take(key: string, limits: TurnLimits, client?: Leaving): (() => void) | Promise<(() => void) | null> | null {
    let line = this.lines.get(key);
    if (!line) {
      line = { running: 0, waiting: [] };
      this.lines.set(key, line);
    }
    const mine = line;
    const end = () => this.end(key, mine);
    if (mine.running < limits.running) {
      mine.running++;
      return once(end);
    }
    if (mine.waiting.length >= limits.waiting) return null;
    return new Promise((resolve) => {
      const start = () => {
        client?.off("close", leave);
        resolve(once(end));
      };
      const leave = () => {
        const at = mine.waiting.indexOf(start);
        if (at < 0) return;
        mine.waiting.splice(at, 1);
        resolve(null);
      };
      mine.waiting.push(start);
      client?.once("close", leave);
    });
  }

  /** Turns running now, and waiting, in the lines whose key starts with `prefix` (tests). */
  counts(prefix = ""): { running: number; waiting: number } {
    const counts = { running: 0, waiting: 0 };
    for (const [key, line] of this.lines) {
      if (!key.startsWith(prefix)) continue;
      counts.running += line.running;
      counts.waiting += line.waiting.length;
    }
    return counts;
  }

  private end(key: string, line: Line): void {
    const next = line.waiting.shift();
    // (The turn passes to the next in line: the count stays.)
    if (next) {
      next();
      return;
    }
    line.running--;
    if (line.running === 0 && this.lines.get(key) === line) this.lines.delete(key);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
