/**
 * Change-stream places in the database (store/postgres/stream-places.ts): every holder (instance)
 * counts every other's open streams against the per-user and per-app caps, exactly under races;
 * places are renewed while held, a holder that died leaves places that run out, and a place given
 * back while the database was away is given back again once it is there.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Database } from "../../src/store/postgres/database.ts";
import { PgStreamPlaces } from "../../src/store/postgres/stream-places.ts";
import { emulatorDatabase, statementsOf, type TestDatabase } from "../helpers/postgres.ts";
import { until } from "../helpers/until.ts";

let database: TestDatabase;
let db: Database;
const holders: PgStreamPlaces[] = [];

beforeAll(async () => {
  database = await emulatorDatabase("places");
  db = new Database({ url: database.url });
}, 30_000);

afterAll(async () => {
  for (const holder of holders) holder.stop();
  await db?.close();
  await database?.drop();
});

/** A holder as one instance has it (each instance its own; here on one pool). */
function holder(timing = { leaseSeconds: 30, renewEveryMs: 10_000 }): PgStreamPlaces {
  const places = new PgStreamPlaces(db, timing);
  holders.push(places);
  return places;
}

const idOf = (taken: { id: string } | { cap: string }) => {
  if (!("id" in taken)) throw new Error(`refused: ${taken.cap}`);
  return taken.id;
};

describe("stream places in the database", () => {
  it("count every holder's streams against the user's and the app's caps, and free a place given back", async () => {
    const [a, b] = [holder(), holder()];
    const caps = { perUser: 1, perApp: 2, perAddress: 1000 };
    const first = idOf(await a.take("app-1", "ann", "10.0.0.1", caps));
    expect(await b.take("app-1", "ann", "10.0.0.1", caps)).toEqual({ cap: "user" });
    idOf(await b.take("app-1", "bob", "10.0.0.1", caps));
    expect(await a.take("app-1", "cid", "10.0.0.1", caps)).toEqual({ cap: "app" });
    // Another app's streams are its own.
    idOf(await b.take("app-2", "ann", "10.0.0.1", caps));
    a.give(first);
    await until(async () => "id" in (await b.take("app-1", "ann", "10.0.0.1", caps)), "ann's place given back", {
      timeoutMs: 5_000,
    });
  });

  it("count one client address's streams, whatever their users, across holders", async () => {
    const [a, b] = [holder(), holder()];
    const caps = { perUser: 10, perApp: 100, perAddress: 2 };
    idOf(await a.take("app-address", "ann", "10.0.0.7", caps));
    idOf(await b.take("app-address", "bob", "10.0.0.7", caps));
    expect(await a.take("app-address", "cid", "10.0.0.7", caps)).toEqual({ cap: "address" });
    idOf(await b.take("app-address", "cid", "10.0.0.8", caps));
  });

  it("are taken in one statement, with no transaction held open across round trips", async () => {
    const a = holder();
    const caps = { perUser: 1, perApp: 10, perAddress: 1000 };
    const taken = await statementsOf(() => a.take("app-one-trip", "ann", "10.0.0.1", caps));
    expect(taken.roundTrips).toBe(1);
    expect(taken.texts).toHaveLength(1);
    const refused = await statementsOf(async () =>
      expect(await a.take("app-one-trip", "ann", "10.0.0.1", caps)).toEqual({ cap: "user" }),
    );
    expect(refused.texts).toHaveLength(1);
  });

  it("are exact when holders race for the last places", async () => {
    const [a, b] = [holder(), holder()];
    const caps = { perUser: 3, perApp: 100, perAddress: 1000 };
    const attempts = await Promise.all(
      Array.from({ length: 12 }, (_, i) => (i % 2 ? a : b).take("app-race", "ann", "10.0.0.1", caps)),
    );
    expect(attempts.filter((t) => "id" in t)).toHaveLength(3);
    expect(attempts.filter((t) => "cap" in t && t.cap === "user")).toHaveLength(9);
    const [row] = await db.rows<{ n: number }>("SELECT count(*)::int AS n FROM open_streams WHERE app_id = 'app-race'");
    expect(row?.n).toBe(3);
  });

  it("are renewed while held, and run out when their holder died", async () => {
    const caps = { perUser: 1, perApp: 10, perAddress: 1000 };
    const live = holder({ leaseSeconds: 1, renewEveryMs: 100 });
    const id = idOf(await live.take("app-lease", "ann", "10.0.0.1", caps));
    const expiry = async () =>
      (await db.rows<{ at: Date }>("SELECT expires_at AS at FROM open_streams WHERE id = $1", [id]))[0]?.at.getTime();
    const first = (await expiry())!;
    // Renewed past its first lease: still held, still counted.
    await until(async () => ((await expiry()) ?? 0) > first + 1_000, "the place renewed past its first lease", {
      timeoutMs: 5_000,
      everyMs: 50,
    });
    expect(await holder().take("app-lease", "ann", "10.0.0.1", caps)).toEqual({ cap: "user" });

    // Its holder dies (no more renewals, nothing given back): the place runs out with its lease.
    live.stop();
    const other = holder();
    await until(
      async () => "id" in (await other.take("app-lease", "ann", "10.0.0.1", caps)),
      "the dead holder's place to run out",
      {
        timeoutMs: 5_000,
        everyMs: 100,
      },
    );
  });

  it("given back while the database was away, are deleted once it is back (not at the end of their lease)", async () => {
    const caps = { perUser: 1, perApp: 10, perAddress: 1000 };
    let away = false;
    // The holder's view of the database: its queries fail while `away`.
    const flaky = new Proxy(db, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== "query" || typeof value !== "function") return value;
        return (...args: unknown[]) =>
          away ? Promise.reject(new Error("the database is away")) : value.apply(target, args);
      },
    });
    const returning = new PgStreamPlaces(flaky, { leaseSeconds: 30, renewEveryMs: 100 });
    holders.push(returning);
    const id = idOf(await returning.take("app-away", "ann", "10.0.0.1", caps));
    away = true;
    returning.give(id);
    const other = holder();
    expect(await other.take("app-away", "ann", "10.0.0.1", caps)).toEqual({ cap: "user" });
    away = false;
    // Well inside the 30 s lease: the next renewal tick deletes it.
    await until(
      async () => "id" in (await other.take("app-away", "ann", "10.0.0.1", caps)),
      "the place given back again",
      {
        timeoutMs: 5_000,
        everyMs: 100,
      },
    );
  });
});
