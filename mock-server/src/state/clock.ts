/**
 * The injectable clock. Every time the emulator reasons about (token expiry, link expiry, rate
 * limits, `createdAt`) comes from a namespace's clock, which tests can move forward.
 */
export interface Clock {
  /** Milliseconds since the epoch, as this namespace sees them. */
  now(): number;
  /** How far this clock runs ahead of the real one. */
  readonly offsetMs: number;
  advance(ms: number): void;
  set(offsetMs: number): void;
}

/**
 * A clock `offsetMs` ahead of the real one; `onChange` runs after every move (what waits on it
 * re-arms), told how far it moved (less than zero: put back).
 */
export function createClock(
  offsetMs = 0,
  realNow: () => number = Date.now,
  onChange?: (movedMs: number) => void,
): Clock {
  let offset = Math.round(offsetMs);
  return {
    now: () => realNow() + offset,
    get offsetMs() {
      return offset;
    },
    // (Whole milliseconds: a move of a fraction of one would make every Date.now() a fraction.)
    advance(ms: number) {
      const by = Math.round(ms);
      offset += by;
      onChange?.(by);
    },
    set(value: number) {
      const moved = Math.round(value) - offset;
      offset += moved;
      onChange?.(moved);
    },
  };
}

export function clockView(clock: Clock) {
  const nowMs = clock.now();
  return { now: new Date(nowMs).toISOString(), nowMs, offsetMs: clock.offsetMs };
}

/**
 * The last moment an app's clock may show: the last second the 32-bit seconds of an ObjectId and
 * of a BSON timestamp hold (2106-02-07T06:28:15Z). Past it, the ObjectIds and timestamps the app's
 * database and functions make by its clock would wrap around or be refused (decision 0063).
 */
const latestAppTimeMs = 0xffff_ffff * 1000;

/** Why a clock `offsetMs` ahead of the real one cannot be an app's (past latestAppTimeMs), or null. */
export function appClockRefusal(offsetMs: number, realNow = Date.now()): string | null {
  if (realNow + offsetMs <= latestAppTimeMs) return null;
  return `the app's clock cannot pass ${new Date(latestAppTimeMs).toISOString()}, the last second an ObjectId or a timestamp holds`;
}
