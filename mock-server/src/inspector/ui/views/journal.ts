/**
 * A request journal (an app's or an EmailJS account's), newest first, filtered by operation, status
 * and text; each entry opens to its request and its reply (status, error code, body), redacted.
 */
import type { Schemas } from "../api.ts";
import { h, json, table, time } from "../dom.ts";
import { action, navigate, withQuery } from "../view.ts";

type JournalEntry = Schemas["JournalEntry"];
export interface JournalFilter {
  operationId?: string;
  status?: number;
  search?: string;
}

/** Where a journal comes from: its page, the operations it can hold, and the calls that read and clear it. */
export interface JournalSource {
  base: string;
  operations: string[];
  list(filter: JournalFilter): Promise<JournalEntry[]>;
  clear(): Promise<void>;
}

function filterOf(query: URLSearchParams): JournalFilter {
  const status = Number(query.get("status"));
  return {
    ...(query.get("operationId") ? { operationId: query.get("operationId")! } : {}),
    ...(Number.isInteger(status) && status >= 100 && status <= 599 ? { status } : {}),
    ...(query.get("search") ? { search: query.get("search")! } : {}),
  };
}

function filterForm(source: JournalSource, filter: JournalFilter, refresh: () => void): HTMLElement {
  const onFilter = (event: Event) => {
    event.preventDefault();
    const data = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(data.get(name) ?? "").trim();
    navigate(
      withQuery(source.base, { operationId: text("operationId"), status: text("status"), search: text("search") }),
      refresh,
    );
  };
  const filtered = Object.keys(filter).length > 0;
  return h(
    "form",
    { class: "inline", role: "search", "aria-label": "Filter requests", onsubmit: onFilter },
    h(
      "label",
      null,
      "Operation",
      h(
        "select",
        { name: "operationId", "data-key": "journal-operation" },
        h("option", { value: "" }, "Any operation"),
        source.operations.map((id) => h("option", { value: id, selected: id === filter.operationId }, id)),
      ),
    ),
    h(
      "label",
      null,
      "Status",
      h("input", {
        name: "status",
        type: "number",
        min: 100,
        max: 599,
        value: filter.status ?? "",
        "data-key": "journal-status",
      }),
    ),
    h(
      "label",
      null,
      "Text",
      h("input", { name: "search", type: "search", value: filter.search ?? "", "data-key": "journal-search" }),
    ),
    h("button", { type: "submit" }, "Filter"),
    filtered ? h("a", { href: source.base }, "Show all") : null,
  );
}

function replyOf(entry: JournalEntry): Node[] {
  return [
    h("h3", { class: "minor" }, "Request"),
    entry.requestBody !== undefined ? json(entry.requestBody) : h("p", { class: "empty" }, "No body."),
    h("h3", { class: "minor" }, `Reply ${entry.status}${entry.errorCode ? ` ${entry.errorCode}` : ""}`),
    entry.responseBody !== undefined ? json(entry.responseBody) : h("p", { class: "empty" }, "No body."),
  ];
}

export async function journalPanel(
  source: JournalSource,
  selected: string | undefined,
  query: URLSearchParams,
  refresh: () => void,
): Promise<Node> {
  const filter = filterOf(query);
  const requests = await source.list(filter);
  const newest = [...requests].reverse();
  const onClear = action(async () => {
    await source.clear();
    return "Journal cleared.";
  }, refresh);
  return h(
    "div",
    null,
    filterForm(source, filter, refresh),
    requests.length > 0 || Object.keys(filter).length > 0
      ? h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "danger", onclick: onClear }, "Clear journal"),
        )
      : null,
    table(
      `${requests.length} ${Object.keys(filter).length > 0 ? "matching " : ""}request${requests.length === 1 ? "" : "s"}, newest first`,
      ["Time", "Operation", "Status", "Duration", "Request and reply"],
      newest.map((entry) => [
        time(entry.time),
        [
          entry.operationId ?? "—",
          entry.faulted ? [h("br"), h("small", { class: "pending" }, "fault injected")] : null,
        ],
        [
          h("span", { class: entry.status < 400 ? "status-ok" : "status-err" }, String(entry.status)),
          entry.errorCode ? [h("br"), h("small", null, entry.errorCode)] : null,
        ],
        `${entry.durationMs} ms`,
        h(
          "details",
          { "data-key": `request-${entry.id}`, open: entry.id === selected, id: `request-${entry.id}` },
          h("summary", null, `${entry.method} ${entry.path}`),
          replyOf(entry),
        ),
      ]),
      Object.keys(filter).length > 0 ? "No request matches." : "No requests yet.",
      (i) => ({ class: newest[i]?.id === selected ? "selected" : null }),
    ),
  );
}
