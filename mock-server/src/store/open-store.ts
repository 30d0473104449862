/** The store the options ask for: PostgreSQL with `--database`, else a new in-memory one. */
import { parse as parseConnectionString } from "pg-connection-string";
import type { EmulatorOptions } from "../config/options.ts";
import { MemoryStore } from "./memory/memory-store.ts";
import { connectionUrl } from "./postgres/connection-url.ts";
import type { Store } from "./store.ts";

const urlShape = "postgres://user:password@host:port/database";

/**
 * Checks `--database` at start, read as node-postgres reads it (so a Unix socket's folder in
 * `?host=`, with or without a user, passes): the reason it cannot be used, or null.
 */
export function checkDatabaseUrl(text: string): string | null {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return `not a URL (${urlShape})`;
  if (scheme !== "postgres" && scheme !== "postgresql")
    return `'${scheme}://…' is not a PostgreSQL URL: use ${urlShape}`;
  let host: string | undefined;
  try {
    host = parseConnectionString(connectionUrl(text)).host ?? undefined;
  } catch (error) {
    return `the URL cannot be read: ${(error as Error).message}`;
  }
  return host ? null : "the URL names no host";
}

export async function openStore(
  options: Pick<EmulatorOptions, "databaseUrl" | "databasePoolSize"> & Partial<Pick<EmulatorOptions, "triggerLeaseMs">>,
): Promise<Store> {
  if (!options.databaseUrl) return new MemoryStore();
  // Loaded only here: the PostgreSQL client costs a start without --database a tenth of its time.
  const { PostgresStore } = await import("./postgres/postgres-store.ts");
  return PostgresStore.open({
    url: options.databaseUrl,
    maxConnections: options.databasePoolSize,
    ...(options.triggerLeaseMs !== undefined ? { triggerLeaseMs: options.triggerLeaseMs } : {}),
  });
}
