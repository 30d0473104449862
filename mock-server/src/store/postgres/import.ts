/**
 * Loads `mongoexport` output (one Extended JSON document per line, canonical or relaxed) into a
 * collection of an app in the database. The file is streamed (any size, a batch at a time) inside
 * one transaction: a bad line — not JSON, not a document, not valid Extended JSON, an `_id` an
 * insert refuses or one that exists already or twice — is reported by its line number, and then nothing of the file is kept.
 * Memory stays bounded whatever the file's size (duplicate `_id`s are found by the primary key).
 * A bulk import sends no change events (like a restore, not like inserts).
 */
import { createInterface } from "node:readline";
import { ObjectId } from "bson";
import { type Document, fromEJSON, idRefusal, isDocument } from "../../data/documents.ts";
import { strictFormMarkers, strictFormProblem } from "../../data/strict-forms.ts";
import type { Database } from "./database.ts";
import { storedDocument } from "./documents.ts";
import { idRowKey } from "./row-keys.ts";
import type { JsonParam } from "./text-encoding.ts";

export interface ImportTarget {
  appId: string;
  database: string;
  collection: string;
}

export class ImportError extends Error {
  constructor(
    message: string,
    /** `line N: reason`, at most `maxReported` of them. */
    readonly problems: string[],
  ) {
    super(message);
  }
}

const batchSize = 1000;
const maxReported = 20;

interface Row {
  line: number;
  key: string;
  text: JsonParam;
}

/** Imports the lines of `input`; answers how many documents went in. */
export async function importDocuments(
  db: Database,
  target: ImportTarget,
  input: NodeJS.ReadableStream,
): Promise<number> {
  const problems: string[] = [];
  let problemCount = 0;
  const report = (line: number, reason: string) => {
    problemCount++;
    if (problems.length < maxReported) problems.push(`line ${line}: ${reason}`);
  };
  let imported = 0;
  await db.transaction(async (client) => {
    const { rowCount } = await client.query("SELECT 1 FROM apps WHERE app_id = $1", [target.appId]);
    if (rowCount !== 1) throw new ImportError(`no app with id '${target.appId}' in the database`, []);
    // An operator's import brings the data over whatever the app's limits (counted all the same:
    // writes after it are held to them; docs/decisions/0012-quotas.md).
    await client.query("SELECT set_config('emulator.limits', 'off', true)");
    await client.query("INSERT INTO collections (app_id, db, coll) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", [
      target.appId,
      target.database,
      target.collection,
    ]);
    let batch: Row[] = [];
    const flush = async () => {
      // Batches still go in after a bad line (the transaction is rolled back at the end anyway),
      // so the database finds every taken _id and the report is complete in one pass.
      if (batch.length === 0) return;
      const { rows } = await client.query<{ id_key: string }>(
        `INSERT INTO documents (app_id, db, coll, id_key, doc, ejson)
           SELECT $1, $2, $3, v.k, v.t::jsonb, v.t FROM unnest($4::text[], $5::text[]) WITH ORDINALITY AS v(k, t, n)
            ORDER BY v.n
           ON CONFLICT DO NOTHING RETURNING id_key`,
        [target.appId, target.database, target.collection, batch.map((r) => r.key), batch.map((r) => r.text)],
      );
      if (rows.length < batch.length) {
        // The first line of an _id in this batch went in (unless the _id was there before); the others did not.
        const inserted = new Set(rows.map((r) => r.id_key));
        const matched = new Set<string>();
        for (const row of batch) {
          if (inserted.has(row.key) && !matched.has(row.key)) matched.add(row.key);
          else report(row.line, "its _id is taken (in the collection, or earlier in the file)");
        }
      }
      imported += rows.length;
      batch = [];
    };
    let line = 0;
    // Made right where it is read: readline drops the lines it reads before its iterator exists.
    const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    for await (const raw of lines) {
      line++;
      const text = raw.trim();
      if (text === "") continue;
      if (line === 1 && text.startsWith("[")) {
        report(1, "a JSON array: export with mongoexport's default one-document-per-line output (no --jsonArray)");
        break;
      }
      let json: unknown;
      let doc: unknown;
      try {
        json = JSON.parse(text);
      } catch (error) {
        report(line, `not JSON (${(error as Error).message})`);
        continue;
      }
      try {
        const problem = strictFormMarkers.test(text) ? strictFormProblem(json) : null;
        if (problem !== null) throw new Error(problem);
        doc = fromEJSON(json);
      } catch (error) {
        report(line, `not valid Extended JSON (${(error as Error).message})`);
        continue;
      }
      if (!isDocument(doc)) {
        report(line, "not a document");
        continue;
      }
      const document = doc as Document;
      if (document._id === undefined) document._id = new ObjectId();
      const refusal = idRefusal(document);
      if (refusal !== null) {
        report(line, refusal);
        continue;
      }
      batch.push({ line, key: idRowKey(document._id), text: storedDocument(document) });
      if (batch.length >= batchSize) await flush();
    }
    await flush();
    if (problemCount === 0) {
      // Fresh statistics for the planner: the collection may have grown a lot at once.
      await client.query("ANALYZE documents");
    } else {
      const more = problemCount > problems.length ? ` (the first ${problems.length} shown)` : "";
      throw new ImportError(`${problemCount} bad line(s)${more}: nothing was imported`, problems);
    }
  });
  return imported;
}
