/**
 * `app-services-emulator import`: loads a `mongoexport` file (one Extended JSON document per line)
 * into a collection of an app in the database, all or nothing (store/postgres/import.ts).
 */
import { createReadStream } from "node:fs";
import { parseArgs } from "node:util";
import { checkDatabaseUrl } from "./store/open-store.ts";
import { Database, describeUrl } from "./store/postgres/database.ts";
import { ImportError, importDocuments } from "./store/postgres/import.ts";
import { latestVersion } from "./store/postgres/migrations.ts";

export const importUsage = `Usage:
  app-services-emulator import --database URL --app-id ID --db NAME --collection NAME FILE

Loads FILE (mongoexport's output: one canonical or relaxed Extended JSON document per line, '-' for
standard input) into the collection of the app, which must exist in the database (start a server on it
with the app's folder first). All or nothing: a bad line is reported with its number and nothing is
imported. The database URL can also come from DATABASE_URL.`;

/** Runs the command; answers the exit code (0 imported, 1 refused, 2 bad usage). */
export async function runImport(argv: string[]): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`${message}\n\n${importUsage}\n`);
    return 2;
  };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    return fail((error as Error).message);
  }
  const { values, positionals } = parsed;
  const url = values.database ?? process.env.DATABASE_URL;
  if (!url) return fail("import needs --database (or DATABASE_URL)");
  const problem = checkDatabaseUrl(url);
  if (problem) return fail(`--database: ${problem}`);
  for (const name of ["app-id", "db", "collection"] as const) {
    if (!values[name]) return fail(`import needs --${name}`);
  }
  if (positionals.length !== 1) return fail("import needs exactly one FILE");
  const file = positionals[0]!;
  const input = file === "-" ? process.stdin : createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    if (file === "-") resolve();
    else input.once("open", () => resolve()).once("error", reject);
  });
  try {
    await opened;
  } catch (error) {
    process.stderr.write(`Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? error}\n`);
    return 1;
  }
  const db = new Database({ url, maxConnections: 1 });
  try {
    const [row] = await db
      .rows<{ version: number | null }>("SELECT max(version) AS version FROM schema_migrations")
      .catch((error: unknown) => {
        throw new Error(
          /schema_migrations/.test((error as Error).message)
            ? `the database at ${describeUrl(url)} has no emulator schema: start the server on it once first`
            : `Cannot reach the database at ${describeUrl(url)}: ${(error as Error).message}`,
        );
      });
    if ((row?.version ?? 0) > latestVersion)
      throw new Error(`the database schema is version ${row?.version}, newer than this tool's ${latestVersion}`);
    const count = await importDocuments(
      db,
      { appId: values["app-id"]!, database: values.db!, collection: values.collection! },
      input,
    );
    process.stdout.write(`Imported ${count} documents into ${values["app-id"]} ${values.db}.${values.collection}\n`);
    return 0;
  } catch (error) {
    if (error instanceof ImportError) {
      process.stderr.write(`${error.message}\n${error.problems.map((p) => `  ${p}\n`).join("")}`);
    } else {
      process.stderr.write(`${(error as Error).message}\n`);
    }
    return 1;
  } finally {
    input.destroy();
    await db.close();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      database: { type: "string" },
      "app-id": { type: "string" },
      db: { type: "string" },
      collection: { type: "string" },
    },
  });
}
