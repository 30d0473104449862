/**
 * A query worker thread: runs the evaluating part of MongoDB actions and stream filters
 * (query-jobs.ts) that did not fit the main thread's slice, under the whole budget. The pool
 * (query-workers.ts) keeps the hard timeout: a worker past its job's deadline is terminated, never
 * waited for. Messages carry documents as canonical Extended JSON (a stored document's kept text
 * costs the main thread nothing to send); replies and decisions come back as text, verdicts as
 * values. See docs/decisions/0019-evaluation-off-the-main-thread.md.
 */
import { parentPort } from "node:worker_threads";
import { AppServicesError, appServicesErrors as errors } from "../errors/catalogue.ts";
import { withCollation } from "./collation.ts";
import { type Document, fromEJSONText, fromStoredText, toEJSONText } from "./documents.ts";
import { maxReplyBytes, replyText } from "./ejson-text.ts";
import { type MatchJob, mongoError, type ReadJob, runMatch, runRead, runWrite, type WriteJob } from "./query-jobs.ts";
import { withQueryLimits } from "./query-limits.ts";
import type { WorkerReply, WorkerRequest } from "./query-workers.ts";

function evaluate(request: WorkerRequest): WorkerReply {
  // The job's deadline on this thread's clock (time it waited counts).
  const deadline = request.deadlineAt - performance.timeOrigin;
  const limits = { timeoutMs: deadline - performance.now(), memoryLimitBytes: request.memoryLimitBytes };
  const job = fromEJSONText(request.job);
  const decoder = new TextDecoder();
  // (Documents as stores write them: the common types' reader, documents.ts fromStoredText.)
  const docs = fromStoredText(decoder.decode(request.docs)).value as Document[];
  return withQueryLimits(
    limits,
    (): WorkerReply => withCollation(request.collation, () => runJob(request, job, docs, decoder)),
    { deadline, now: request.now },
  );
}

/** A job's work, under the budget and collation `evaluate` set. */
function runJob(request: WorkerRequest, job: unknown, docs: Document[], decoder: TextDecoder): WorkerReply {
  switch (request.kind) {
    case "read": {
      const others: Record<string, Document[]> = {};
      for (const [name, bytes] of Object.entries(request.others))
        others[name] = fromStoredText(decoder.decode(bytes)).value as Document[];
      const value = runRead(job as ReadJob, docs, others);
      const text = replyText(value, {
        capBytes: maxReplyBytes,
        measureFirst: true,
        onTooLarge: errors.replyTooLarge,
      });
      return { ok: true, text };
    }
    case "write":
      return { ok: true, text: toEJSONText({ decision: runWrite(job as WriteJob, docs) }) };
    case "match":
      return { ok: true, verdict: runMatch(job as MatchJob, docs[0]!, docs[1]) };
  }
}

function failure(error: unknown): WorkerReply {
  try {
    mongoError(error);
  } catch (mapped) {
    if (mapped instanceof AppServicesError)
      return { ok: false, error: { status: mapped.statusCode, message: mapped.message, code: mapped.errorCode } };
  }
  return { ok: false, error: { status: 400, message: String(error), code: "MongoDBError" } };
}

parentPort?.postMessage("ready");
parentPort?.on("message", (message: { id: number; request: WorkerRequest }) => {
  let reply: WorkerReply;
  try {
    reply = evaluate(message.request);
  } catch (error) {
    reply = failure(error);
  }
  parentPort?.postMessage({ id: message.id, reply });
});
