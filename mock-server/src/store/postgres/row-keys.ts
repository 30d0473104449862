/**
 * A btree index entry holds at most about 2.7 kB, and a key column is in one: a document's `_id`
 * and an identity's id can be longer (MongoDB has had no index key limit since 4.2; a custom
 * function or token names its users as it likes). So a key over 256 characters is stored as `h:`
 * and its SHA-256 instead: still one row per key (a collision would take a SHA-256 preimage), and
 * shorter keys stay as they are, readable in the database. Only ever compared, never read back: the
 * document (and the user) keep the value itself.
 */
import { createHash } from "node:crypto";
import { idKey } from "../../data/documents.ts";

const longestStored = 256;

export function rowKey(key: string): string {
  return key.length <= longestStored ? key : `h:${createHash("sha256").update(key).digest("base64url")}`;
}

/** The `id_key` of a document's `_id`. */
export const idRowKey = (id: unknown): string => rowKey(idKey(id));
