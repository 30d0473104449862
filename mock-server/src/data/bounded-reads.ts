/**
 * Reads bounded in time and in documents (docs/decisions/0018-fair-shares.md). An action reads the
 * store's batches (DocumentStore.scan) one after another and between two of them:
 *
 * - checks its deadline (MongoDB's "operation exceeded time limit"), so a read of many documents
 *   ends at the deadline instead of after decoding all of them;
 * - counts the documents examined against the app's `queryDocsExaminedLimit`;
 * - lets other requests run once it has held the event loop for a few milliseconds.
 *
 * The caller stops reading once it has what it needs (MongoService.candidates); the query engine's
 * match, sort and cut of what was read run under the action's query limits (query-jobs.ts).
 */
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { Document } from "./documents.ts";
import { Turns } from "./turns.ts";

/** What one action may still spend on reading. */
export interface ReadBudget {
  /** performance.now() past which the action answers the time-limit error. */
  deadline: number;
  /** Documents the action may examine in all (every collection it reads). */
  maxExamined: number;
  examined: number;
}

/** The batches of a read, checked against the budget between them (see above). */
export async function* bounded(batches: AsyncIterable<Document[]>, budget: ReadBudget): AsyncGenerator<Document[]> {
  const turns = new Turns();
  for await (const batch of batches) {
    budget.examined += batch.length;
    if (budget.examined > budget.maxExamined) throw errors.docsExaminedLimit(budget.maxExamined);
    if (performance.now() > budget.deadline) throw errors.queryTimeLimit();
    yield batch;
    await turns.maybe();
  }
}
