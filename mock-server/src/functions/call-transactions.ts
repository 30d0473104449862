/**
 * The multi-document transactions of one function call (data/transactions.ts), by the key its
 * process gives each (`<session>:<txnNumber>`): begun by their first action, ended by a commit or
 * an abort, and dropped unwritten when the call ends with any still open.
 */
import { createHash } from "node:crypto";
import { Binary, UUID } from "bson";
import { Transaction } from "../data/transactions.ts";
import type { DocumentStore, Writer } from "../store/store.ts";

/** The most transactions one call may hold open at once (each may hold up to 16 MB of writes). */
export const maxOpenTransactions = 8;

export class CallTransactions {
  private readonly open = new Map<string, Transaction>();
  /** The call's sessions' ids (MongoDB's `lsid`), by the number its process gives each. */
  private readonly sessions = new Map<number, { id: Binary; uid: Binary }>();
  /** The user the app's sessions are of (`lsid.uid`: a SHA-256 of the name; one per app, as the service's database user). */
  private readonly uid: Binary;

  constructor(
    private readonly store: DocumentStore,
    appId: string,
  ) {
    this.uid = new Binary(createHash("sha256").update(`mongodb-realm-${appId}`).digest(), Binary.SUBTYPE_DEFAULT);
  }

  /** The transaction of `key`, begun now when it is new. */
  of(key: unknown): Transaction {
    const [session, number] = typeof key === "string" ? key.split(":").map(Number) : [];
    if (!Number.isInteger(session) || !Number.isInteger(number))
      throw new Error("a transaction key must be <session>:<number>");
    const name = key as string;
    const open = this.open.get(name);
    if (open) return open;
    if (this.open.size >= maxOpenTransactions)
      throw new Error(`a function call may have at most ${maxOpenTransactions} transactions open at once`);
    let lsid = this.sessions.get(session!);
    if (lsid === undefined) {
      lsid = { id: new UUID(), uid: this.uid };
      this.sessions.set(session!, lsid);
    }
    const transaction = new Transaction(this.store, number!, lsid);
    this.open.set(name, transaction);
    return transaction;
  }

  /** Commits the transaction of `key` as `writer` (one that ran no action has nothing to write). */
  async commit(key: unknown, writer: Writer | undefined): Promise<void> {
    const transaction = typeof key === "string" ? this.open.get(key) : undefined;
    if (!transaction) return;
    try {
      await transaction.commit(writer);
    } finally {
      this.open.delete(key as string);
    }
  }

  abort(key: unknown): void {
    if (typeof key !== "string") return;
    this.open.get(key)?.abort();
    this.open.delete(key);
  }

  /** The call ended: what is still open is dropped. */
  close(): void {
    for (const transaction of this.open.values()) transaction.abort();
    this.open.clear();
  }
}
