/** The store the options ask for: PostgreSQL with `--database`, else a new in-memory one. */
import type { EmulatorOptions } from "../config/options.ts";
import { MemoryStore } from "./memory/memory-store.ts";
import type { Store } from "./store.ts";

/** Checks `--database` at start: the reason it is not a PostgreSQL URL, or null. */
export function checkDatabaseUrl(text: string): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "not a URL (postgres://user:password@host:port/database)";
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:")
    return `'${url.protocol}//…' is not a PostgreSQL URL: use postgres://user:password@host:port/database`;
  if (!url.hostname && !url.searchParams.get("host")) return "the URL names no host";
  return null;
}

export async function openStore(options: Pick<EmulatorOptions, "databaseUrl" | "databasePoolSize">): Promise<Store> {
  if (!options.databaseUrl) return new MemoryStore();
  // Loaded only here: the PostgreSQL client costs a start without --database a tenth of its time.
  const { PostgresStore } = await import("./postgres/postgres-store.ts");
  return PostgresStore.open({ url: options.databaseUrl, maxConnections: options.databasePoolSize });
}
