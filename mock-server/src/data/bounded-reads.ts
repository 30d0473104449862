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

/**
 * The batches of a read, checked against the budget between them (see above). A batch that runs
 * past the documents the action may examine is handed on up to the limit first: an action whose
 * answer is in those documents stops there (as MongoDB examines documents one by one), and only
 * one that asks for more gets the error. A caller that cannot tell by itself whether it has what
 * it needs (batches it kept without matching them) answers through `enough`: when it has, the
 * read ends there.
 */
export async function* bounded(
  batches: AsyncIterable<Document[]>,
  budget: ReadBudget,
  enough?: () => Promise<boolean>,
): AsyncGenerator<Document[]> {
  const turns = new Turns();
  for await (const batch of batches) {
    const room = budget.maxExamined - budget.examined;
    const within = batch.length > room ? batch.slice(0, Math.max(0, room)) : batch;
    budget.examined += within.length;
    if (performance.now() > budget.deadline) throw errors.queryTimeLimit();
    if (within.length > 0) yield within;
    if (within !== batch) {
      if (enough !== undefined && (await enough())) return;
      throw errors.docsExaminedLimit(budget.maxExamined);
    }
    await turns.maybe();
  }
}
