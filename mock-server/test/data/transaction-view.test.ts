/**
 * A transaction's view of the store (data/transactions.ts) over the in-memory store: the versions
 * its reads repeat, the documents it keeps as first read (bounded), and what its commit writes.
 */
import { Binary, UUID } from "bson";
import { afterEach, describe, expect, it } from "vitest";
import type { Document } from "../../src/data/documents.ts";
import { Transaction, transactionLimits } from "../../src/data/transactions.ts";
import { MemoryDocuments } from "../../src/store/memory/documents.ts";
import type { WritePlan } from "../../src/store/store.ts";

const lsid = { id: new UUID(), uid: new Binary(Buffer.alloc(32)) };

const limits = { ...transactionLimits };
afterEach(() => Object.assign(transactionLimits, limits));

const replaceAll = (docs: Document[]): WritePlan<void> => ({
  changes: docs.map((doc) => ({ op: "replace" as const, doc })),
  events: () => [],
  result: () => undefined,
});

async function seeded(n: number) {
  const store = new MemoryDocuments();
  await store.write("db", "c", async () => ({
    changes: Array.from({ length: n }, (_, i) => ({ op: "insert" as const, doc: { _id: i, v: 0 } })),
    events: () => [],
    result: () => undefined,
  }));
  return store;
}

/** Another request's write: every document's `v` set. */
const setAll = (store: MemoryDocuments, v: number) =>
  store.write("db", "c", async (view) => {
    const docs: Document[] = [];
    for await (const batch of view.scan({})) docs.push(...batch.map((doc) => ({ ...doc, v })));
    return replaceAll(docs);
  });

async function read(transaction: Transaction): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const batch of transaction.documents.scan("db", "c", {})) out.push(...batch.map((doc) => doc.v));
  return out;
}

describe("a transaction's view", () => {
  it("repeats the version of each document it first read, and the commit checks those it changed", async () => {
    const store = await seeded(3);
    const transaction = new Transaction(store, 1, lsid);
    expect(await read(transaction)).toEqual([0, 0, 0]);
    await setAll(store, 1);
    expect(await read(transaction)).toEqual([0, 0, 0]);
    // A write over the version it read conflicts at the commit: nothing of it is written.
    await transaction.documents.write("db", "c", async () => replaceAll([{ _id: 0, v: 5 }]));
    await expect(transaction.commit(undefined)).rejects.toMatchObject({ codeName: "WriteConflict" });
    const now: unknown[] = [];
    for await (const batch of store.scan("db", "c", {})) now.push(...batch.map((doc) => doc.v));
    expect(now).toEqual([1, 1, 1]);
  });

  it("ends a transaction open past its lifetime: its writes dropped, what follows NoSuchTransaction", async () => {
    const store = await seeded(1);
    const transaction = new Transaction(store, 7, lsid);
    await transaction.run(() => transaction.documents.write("db", "c", async () => replaceAll([{ _id: 0, v: 9 }])));
    transactionLimits.lifetimeMs = 0;
    await expect(transaction.run(async () => "late")).rejects.toMatchObject({
      codeName: "NoSuchTransaction",
      errorLabels: ["TransientTransactionError"],
      message: "Transaction with { txnNumber: 7 } has been aborted.",
    });
    await expect(transaction.commit(undefined)).rejects.toMatchObject({ codeName: "NoSuchTransaction" });
    const now: unknown[] = [];
    for await (const batch of store.scan("db", "c", {})) now.push(...batch.map((doc) => doc.v));
    expect(now).toEqual([0]);
  });

  it("keeps at most `rememberedReads` documents as first read; later reads are as committed", async () => {
    transactionLimits.rememberedReads = 2;
    const store = await seeded(3);
    const transaction = new Transaction(store, 1, lsid);
    await read(transaction);
    await setAll(store, 1);
    expect(await read(transaction)).toEqual([0, 0, 1]);
  });
});
