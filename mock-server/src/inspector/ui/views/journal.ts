/** A request journal (an app's or an EmailJS account's), newest first; each entry opens to its redacted body. */
import type { Schemas } from "../api.ts";
import { h, json, table, time } from "../dom.ts";

type JournalEntry = Schemas["JournalEntry"];

export function journalTable(requests: JournalEntry[], selected: string | undefined): Node {
  const newest = [...requests].reverse();
  return table(
    `${requests.length} request${requests.length === 1 ? "" : "s"}, newest first`,
    ["Time", "Operation", "Status", "Duration", "Request"],
    newest.map((entry) => [
      time(entry.time),
      [entry.operationId ?? "—", entry.faulted ? [h("br"), h("small", { class: "pending" }, "fault injected")] : null],
      h("span", { class: entry.status < 400 ? "status-ok" : "status-err" }, String(entry.status)),
      `${entry.durationMs} ms`,
      h(
        "details",
        { "data-key": `request-${entry.id}`, open: entry.id === selected, id: `request-${entry.id}` },
        h("summary", null, `${entry.method} ${entry.path}`),
        entry.requestBody !== undefined ? json(entry.requestBody) : h("p", { class: "empty" }, "No body."),
      ),
    ]),
    "No requests yet.",
    (i) => ({ class: newest[i]?.id === selected ? "selected" : null }),
  );
}
