/**
 * Fault overrides (list, add, remove one, clear) and a namespace clock (read, advance, back to real
 * time), for apps and EmailJS accounts.
 */

import { mongoActions } from "../../../data/mongo-action-names.ts";
import type { Schemas } from "../api.ts";
import { clockTime, h, table, time } from "../dom.ts";
import { action } from "../view.ts";

type Fault = Schemas["Fault"];
type FaultRequest = Schemas["FaultRequest"];
type Clock = Schemas["Clock"];

export interface FaultCalls {
  add(fault: FaultRequest): Promise<void>;
  remove(id: string): Promise<void>;
  clear(): Promise<void>;
}

/** The names a fault of `callFunction` can be for: the app's functions and the MongoDB actions (apps only). */
export interface FunctionNames {
  functions: string[];
  actions: string[];
}

export function faultsSection(
  faults: Fault[],
  operationIds: string[],
  calls: FaultCalls,
  refresh: () => void,
  functions?: string[],
): Node {
  const onAdd = action(async () => {
    const form = document.getElementById("fault-form") as HTMLFormElement;
    const data = new FormData(form);
    const text = (name: string) => String(data.get(name) ?? "").trim();
    const fault: FaultRequest = { operationId: text("operationId"), times: Number(text("times") || "1") };
    if (text("functionName")) fault.functionName = text("functionName");
    if (text("status")) fault.status = Number(text("status"));
    if (text("delayMs")) fault.delayMs = Number(text("delayMs"));
    if (text("body")) fault.body = text("body");
    await calls.add(fault);
    return `Fault added for ${fault.functionName ?? fault.operationId}.`;
  }, refresh);
  const onClear = action(async () => {
    await calls.clear();
    return "Faults cleared.";
  }, refresh);
  const remove = (fault: Fault) =>
    action(async () => {
      await calls.remove(fault.id);
      return `Fault ${fault.id} removed.`;
    }, refresh);
  const label = (f: Fault) => `${f.operationId}${f.functionName ? ` ${f.functionName}` : ""}`;
  return h(
    "section",
    { "aria-labelledby": "faults-heading" },
    h("h3", { id: "faults-heading" }, "Faults"),
    table(
      `${faults.length} active fault${faults.length === 1 ? "" : "s"}, first to fire first`,
      ["Operation", "Function", "Status", "Delay", "Remaining", "Added", "Actions"],
      faults.map((f) => [
        f.operationId,
        f.functionName ?? (f.operationId === "callFunction" ? "any" : "—"),
        f.status === undefined ? "runs normally" : String(f.status),
        `${f.delayMs} ms`,
        `${f.remaining} of ${f.times}`,
        time(f.createdAt),
        h(
          "button",
          { type: "button", onclick: remove(f), "aria-label": `Remove the fault ${f.id} (${label(f)})` },
          "Remove",
        ),
      ]),
      "No faults: every call runs normally.",
    ),
    faults.length > 0
      ? h(
          "div",
          { class: "actions" },
          h("button", { type: "button", class: "danger", onclick: onClear }, "Clear faults"),
        )
      : null,
    h(
      "form",
      { id: "fault-form", class: "inline", "aria-label": "Add a fault", onsubmit: onAdd },
      h(
        "label",
        null,
        "Operation",
        h(
          "select",
          { name: "operationId", required: true, "data-key": "fault-operation" },
          operationIds.map((id) => h("option", { value: id }, id)),
        ),
      ),
      functions
        ? [
            h(
              "label",
              null,
              "Function or MongoDB action (callFunction only; empty: any)",
              h("input", {
                name: "functionName",
                type: "text",
                list: "fault-functions",
                autocomplete: "off",
                "data-key": "fault-function",
              }),
            ),
            h(
              "datalist",
              { id: "fault-functions" },
              [...functions, ...mongoActions].map((name) => h("option", { value: name })),
            ),
          ]
        : null,
      h(
        "label",
        null,
        "Status (empty: only delay)",
        h("input", { name: "status", type: "number", min: 200, max: 599, "data-key": "fault-status" }),
      ),
      h(
        "label",
        null,
        "Delay (ms)",
        h("input", { name: "delayMs", type: "number", min: 0, max: 60000, "data-key": "fault-delay" }),
      ),
      h(
        "label",
        null,
        "Times",
        h("input", { name: "times", type: "number", min: 1, value: 1, "data-key": "fault-times" }),
      ),
      h("label", null, "Body (text or JSON)", h("input", { name: "body", type: "text", "data-key": "fault-body" })),
      h("button", { type: "submit" }, "Add fault"),
    ),
  );
}

export interface ClockCalls {
  advance(seconds: number): Promise<void>;
  reset(): Promise<void>;
}

export function clockSection(clock: Clock, calls: ClockCalls, refresh: () => void): Node {
  const onAdvance = action(async () => {
    const input = document.getElementById("advance-by") as HTMLInputElement;
    const seconds = Number(input.value);
    await calls.advance(seconds);
    input.value = "";
    return `Clock advanced by ${seconds} seconds.`;
  }, refresh);
  const onReset = action(async () => {
    await calls.reset();
    return "Clock back on real time.";
  }, refresh);
  return h(
    "section",
    { "aria-labelledby": "clock-heading" },
    h("h3", { id: "clock-heading" }, "Clock"),
    h(
      "p",
      null,
      "Now ",
      clockTime(clock.now),
      clock.offsetMs !== 0 ? ` (${clock.offsetMs / 1000} s ahead of real time)` : " (real time)",
    ),
    clock.offsetMs !== 0
      ? h("div", { class: "actions" }, h("button", { type: "button", onclick: onReset }, "Reset to real time"))
      : null,
    h(
      "form",
      { class: "inline", "aria-label": "Advance the clock", onsubmit: onAdvance },
      h(
        "label",
        null,
        "Seconds to advance",
        h("input", {
          id: "advance-by",
          name: "advanceBy",
          type: "number",
          min: 0,
          step: "any",
          required: true,
          "data-key": "advance-by",
        }),
      ),
      h("button", { type: "submit" }, "Advance clock"),
    ),
  );
}
