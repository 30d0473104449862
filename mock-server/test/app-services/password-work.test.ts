/**
 * Password hashes wait in turns per client address and only as long as they can be expected to
 * start within their bound (state/password-work.ts, docs/decisions/0028-password-work.md): a
 * flood of logins from one address (or many) neither holds another client's login behind it nor
 * fills libuv's thread pool, which files and host-name look-ups share.
 */
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { PasswordWork, PasswordWorkBusyError, trustedLane } from "../../src/state/password-work.ts";
import { base, call, newApp, testApp } from "../helpers/app.ts";

/** A clock that moves 100 ms a reading: a hash alone (read as it starts and ends) takes 100 ms. */
function steps() {
  let clock = 0;
  return () => (clock += 100);
}

/** A queue of one place whose hashes have been measured at 100 ms. */
async function measured(maxWaitMs: number) {
  const queue = new PasswordWork({ concurrency: 1, maxWaitMs }, steps());
  await queue.run(trustedLane, "held", async () => undefined);
  return queue;
}

/** Work that ends when told to. */
function held() {
  const jobs: { lane: string | null; finish: () => void }[] = [];
  const work = (lane: string | null) => () =>
    new Promise<string>((resolve) => jobs.push({ lane, finish: () => resolve(lane ?? "trusted") }));
  return { jobs, work };
}

describe("PasswordWork", () => {
  it("runs at most its concurrency at once and serves the waiting lanes in turn", async () => {
    const queue = new PasswordWork({ concurrency: 1, maxWaitMs: 60_000 }, () => 0);
    const { jobs, work } = held();
    const done: string[] = [];
    const run = (lane: string) => queue.run(lane, "other", work(lane)).then((result) => done.push(result));
    const all = [run("a"), run("a"), run("a"), run("a"), run("b")];
    await expect.poll(() => jobs.length).toBe(1);
    expect(queue.queued).toBe(4);
    for (let i = 0; i < 5; i++) {
      await expect.poll(() => jobs.length).toBe(i + 1);
      jobs[i]!.finish();
    }
    await Promise.all(all);
    // b's one hash came in its first turn, not after a's three.
    expect(done).toEqual(["a", "a", "b", "a", "a"]);
  });

  it("past the expected wait refuses the longest lane's newest, never a newcomer with fewer waiting", async () => {
    // A hash takes 100 ms: 250 ms lets two wait behind the one running.
    const queue = await measured(250);
    const { jobs, work } = held();
    const outcome = (lane: string | null) =>
      queue.run(lane, "other", work(lane)).then(
        () => "ran",
        (error: unknown) => (error instanceof PasswordWorkBusyError ? "busy" : "error"),
      );
    const a = [outcome("a"), outcome("a"), outcome("a")];
    expect(queue.queued).toBe(2);
    // The flooding lane's next one is refused at once.
    expect(await outcome("a")).toBe("busy");
    // Another client's is admitted in place of the flood's newest.
    const b = outcome("b");
    expect(await a[2]).toBe("busy");
    // Then b's lane is as long as a's: a third client's is refused, the control API's never.
    expect(await outcome("c")).toBe("busy");
    const trusted = outcome(trustedLane);
    expect(queue.queued).toBe(3);
    for (let i = 0; i < 4; i++) {
      await expect.poll(() => jobs.length).toBe(i + 1);
      jobs[i]!.finish();
    }
    expect(await Promise.all([a[0], a[1], b, trusted])).toEqual(["ran", "ran", "ran", "ran"]);
    expect(jobs.map((job) => job.lane)).toEqual(["a", "a", "b", null]);
  });
});

describe("PasswordWork's estimate of a hash's time", () => {
  /** A clock by which the hashes run one after another take `durations` (read as each starts and ends). */
  function taking(durations: number[]) {
    let clock = 0;
    let starting = true;
    let next = 0;
    return () => {
      if (!starting) clock += durations[next++] ?? 100;
      starting = !starting;
      return clock;
    };
  }

  /** How many of two more hashes a queue of one place, whose hashes took `durations`, lets wait behind one running. */
  async function waitingAfter(durations: number[], maxWaitMs: number) {
    const queue = new PasswordWork({ concurrency: 1, maxWaitMs }, taking(durations));
    for (let i = 0; i < durations.length; i++) await queue.run(trustedLane, "held", async () => undefined);
    const { jobs, work } = held();
    const all = [0, 1, 2].map(() => queue.run("a", "other", work("a")).catch(() => "busy"));
    const waiting = queue.queued;
    await expect.poll(() => jobs.length).toBe(1);
    for (let i = 0; i <= waiting; i++) {
      await expect.poll(() => jobs.length).toBe(i + 1);
      jobs[i]!.finish();
    }
    expect((await Promise.all(all)).filter((outcome) => outcome === "busy")).toHaveLength(2 - waiting);
    return waiting;
  }

  it("is not thrown by a stall: one slow hash among many does not refuse a login that would wait little", async () => {
    // 31 hashes of 100 ms and one held 1 s (the event loop stalled, a collection): a hash's time is
    // taken at 128 ms, so one may wait (to start within 200 ms), not two. An average weighted to the
    // newest (0.3) took it at 370 ms, and refused the one.
    expect(await waitingAfter([...new Array(31).fill(100), 1000], 200)).toBe(1);
  });

  it("follows a machine that became slower", async () => {
    expect(await waitingAfter([...new Array(32).fill(100), ...new Array(32).fill(400)], 200)).toBe(0);
  });
});

describe("PasswordWork's held checks", () => {
  it("past the bound let a check of a held password take the place of the newest of the rest", async () => {
    const queue = await measured(250);
    const { jobs, work } = held();
    const outcome = (lane: string, check: "held" | "other") =>
      queue.run(lane, check, work(lane)).then(
        () => "ran",
        (error: unknown) => (error instanceof PasswordWorkBusyError ? "busy" : "error"),
      );
    // Many clients, one check each: no lane is longer than a newcomer's would be.
    const first = [outcome("a", "other"), outcome("b", "held"), outcome("c", "other")];
    expect(queue.queued).toBe(2);
    expect(await outcome("d", "other")).toBe("busy");
    const ada = outcome("e", "held");
    // c's made-up login gave its place; b's held check kept its own.
    expect(await first[2]).toBe("busy");
    expect(await outcome("f", "held")).toBe("busy");
    for (let i = 0; i < 3; i++) {
      await expect.poll(() => jobs.length).toBe(i + 1);
      jobs[i]!.finish();
    }
    expect(await Promise.all([first[0], first[1], ada])).toEqual(["ran", "ran", "ran"]);
  });
});

describe("logins under a flood of password checks", () => {
  let app: FastifyInstance | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const login = (server: FastifyInstance, appId: string, username: string, password: string, from: string) =>
    call(server, "login", {
      method: "POST",
      url: `${base}/app/${appId}/auth/providers/local-userpass/login`,
      payload: { username, password },
      remoteAddress: from,
    });

  /**
   * An emulator with Ada (whose hash took 100 ms by the emulator's clock of hashes), whose one
   * place for hashes is held until `release` (so what comes waits).
   */
  async function withUser(maxWaitMs: number, passwordHashCost = 4) {
    const server = await testApp({ passwordHashCost, passwordWork: { concurrency: 1, maxWaitMs, now: steps() } });
    app = server;
    const appId = await newApp(server);
    await call(server, "createUser", {
      method: "POST",
      url: `/_mock/v1/apps/${appId}/users`,
      payload: { email: "ada@example.com", password: "correct horse" },
    });
    let release = () => {};
    const held = server.emulator.passwords.run(trustedLane, "held", () => new Promise<void>((r) => (release = r)));
    const releaseHeld = () => {
      release();
      return held;
    };
    return { server, appId, release: releaseHeld };
  }

  it("serve another address's login in its turn, not after the flood's", async () => {
    // Hashes of some milliseconds (cost 12), so that her sign-in's own work ends before the flood's
    // next few hashes do.
    const { server, appId, release } = await withUser(600_000, 12);
    let floodDone = 0;
    const flood = Array.from({ length: 20 }, (_, i) =>
      login(server, appId, `nobody${i}@example.com`, "wrong password", "203.0.113.9").then((result) => {
        floodDone++;
        return result.response.statusCode;
      }),
    );
    await expect.poll(() => server.emulator.passwords.queued).toBe(20);
    const ada = login(server, appId, "ada@example.com", "correct horse", "198.51.100.7").then((result) => ({
      status: result.response.statusCode,
      floodDone,
    }));
    await expect.poll(() => server.emulator.passwords.queued).toBe(21);
    await release();
    // The flood's first turn, then hers: before, she came after all twenty. (The flood's hashes
    // that end while her login's statements run count too: a full test run here once saw 5 on
    // the PostgreSQL store.)
    const { status, floodDone: before } = await ada;
    expect(status).toBe(200);
    expect(before).toBeLessThanOrEqual(8);
    expect(await Promise.all(flood)).toEqual(Array(20).fill(401));
  });

  it("refuse what cannot start soon with 429 and Retry-After, taking places from the flood", async () => {
    // A hash is taken to last 100 ms here: 5 s lets 50 wait behind the one running.
    const { server, appId, release } = await withUser(5000);
    let answered = 0;
    const flood = Array.from({ length: 100 }, (_, i) =>
      login(server, appId, `nobody${i}@example.com`, "wrong password", "203.0.113.9").then((result) => {
        answered++;
        return result;
      }),
    );
    // Those past the bound are answered at once (while the place is held); the rest wait.
    await expect.poll(() => answered + server.emulator.passwords.queued, { timeout: 30_000 }).toBe(100);
    expect(answered).toBe(50);
    const waiting = server.emulator.passwords.queued;
    const ada = login(server, appId, "ada@example.com", "correct horse", "198.51.100.7");
    // She takes the place of the flood's newest, who is answered 429 now.
    const answeredBefore = answered;
    await expect.poll(() => answered).toBe(answeredBefore + 1);
    expect(server.emulator.passwords.queued).toBe(waiting);
    await release();
    expect((await ada).response.statusCode).toBe(200);
    const results = await Promise.all(flood);
    const refused = results.filter((result) => result.response.statusCode === 429);
    expect(results.length - refused.length).toBe(waiting - 1);
    for (const { response, body } of refused) {
      expect(response.headers["retry-after"]).toBe("1");
      expect(body).toMatchObject({
        error: "too many password checks at once: try again in a second",
        error_code: "TooManyRequests",
      });
    }
    expect(results.every((result) => [401, 429].includes(result.response.statusCode))).toBe(true);
  });

  it("let a registered user's login in past a flood of made-up logins from many addresses", async () => {
    const { server, appId, release } = await withUser(5000);
    let answered = 0;
    const flood = Array.from({ length: 100 }, (_, i) =>
      login(server, appId, `nobody${i}@example.com`, "wrong password", `10.0.${i >> 8}.${i & 255}`).then((result) => {
        answered++;
        return result.response.statusCode;
      }),
    );
    await expect.poll(() => answered + server.emulator.passwords.queued, { timeout: 30_000 }).toBe(100);
    expect(answered).toBe(50);
    // Another made-up login, from an address of its own, finds no place; Ada's takes one.
    const stranger = await login(server, appId, "eve@example.com", "guess", "198.51.100.8");
    expect(stranger.response.statusCode).toBe(429);
    const ada = login(server, appId, "ada@example.com", "correct horse", "198.51.100.7");
    const answeredBefore = answered;
    await expect.poll(() => answered).toBe(answeredBefore + 1);
    await release();
    expect((await ada).response.statusCode).toBe(200);
    const statuses = await Promise.all(flood);
    expect(statuses.filter((status) => status === 401)).toHaveLength(100 - answeredBefore - 1);
  });
});
