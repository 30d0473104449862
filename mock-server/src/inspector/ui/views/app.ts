/** One app: summary and reset, then its users, data, mail, request journal, faults and clock. */
import { client, unwrap } from "../api.ts";
import { clockTime, fields, h, sectionNav, time } from "../dom.ts";
import { appOf, type ControlEvent } from "../live.ts";
import { action, confirmDialog, type View } from "../view.ts";
import { dataPanel } from "./data.ts";
import { clockSection, faultsSection } from "./faults.ts";
import { journalPanel } from "./journal.ts";
import { mailLinks, mailPanel } from "./mail.ts";
import { usersPanel } from "./users.ts";

const tabs = [
  ["users", "Users"],
  ["data", "Data"],
  ["mail", "Mail"],
  ["requests", "Requests"],
  ["faults", "Faults & clock"],
] as const;
export type AppTab = (typeof tabs)[number][0];

const liveTypes: Record<AppTab, ControlEvent["type"][]> = {
  users: ["user"],
  data: ["data"],
  mail: ["mail"],
  requests: ["request", "fault"],
  faults: ["fault", "clock"],
};

let appServicesOperations: Promise<string[]> | null = null;
/** The App Services operations a fault can target, from the emulator's own document. */
function faultableOperations(): Promise<string[]> {
  if (appServicesOperations) return appServicesOperations;
  const reading = unwrap(
    client.GET("/_mock/v1/openapi/{document}", { params: { path: { document: "app-services" } } }),
  ).then((doc) => {
    const paths = (doc as { paths?: Record<string, Record<string, { operationId?: string }>> }).paths ?? {};
    return Object.values(paths)
      .flatMap((item) => Object.values(item).map((op) => op?.operationId))
      .filter((id): id is string => typeof id === "string")
      .sort();
  });
  // A failed read (no control token yet, the server away) is not kept: the next view asks again.
  appServicesOperations = reading;
  reading.catch(() => {
    if (appServicesOperations === reading) appServicesOperations = null;
  });
  return reading;
}

/** App Services fault bodies are JSON; plain text is sent as a JSON string. */
function jsonBody(text: unknown): unknown {
  if (typeof text !== "string") return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function appView(appId: string, tab: AppTab, rest: string[], query: URLSearchParams, refresh: () => void): View {
  const path = { appId };
  const base = `#/apps/${encodeURIComponent(appId)}`;
  async function panel(): Promise<Node> {
    switch (tab) {
      case "users":
        return usersPanel(appId, `${base}/users`, query.get("email") ?? "", refresh);
      case "data":
        return dataPanel(appId, rest[0], rest[1], query, refresh);
      case "mail": {
        const search = query.get("search") ?? "";
        return mailPanel({ appId }, rest[0], rest[1], search, mailLinks(`${base}/mail`, search), refresh);
      }
      case "requests":
        return journalPanel(
          {
            base: `${base}/requests`,
            operations: await faultableOperations(),
            list: async (filter) =>
              (
                await unwrap(
                  client.GET("/_mock/v1/apps/{appId}/requests", {
                    params: { path, query: { ...filter, limit: 10000 } },
                  }),
                )
              ).requests,
            clear: async () => {
              const { response } = await client.DELETE("/_mock/v1/apps/{appId}/requests", { params: { path } });
              if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
            },
          },
          rest[0],
          query,
          refresh,
        );
      case "faults": {
        const [{ faults }, clock, operationIds, details] = await Promise.all([
          unwrap(client.GET("/_mock/v1/apps/{appId}/faults", { params: { path } })),
          unwrap(client.GET("/_mock/v1/apps/{appId}/clock", { params: { path } })),
          faultableOperations(),
          unwrap(client.GET("/_mock/v1/apps/{appId}", { params: { path } })),
        ]);
        return h(
          "div",
          null,
          faultsSection(
            faults,
            operationIds,
            {
              add: async (fault) => {
                await unwrap(
                  client.POST("/_mock/v1/apps/{appId}/faults", {
                    params: { path },
                    body: { ...fault, ...(fault.body !== undefined ? { body: jsonBody(fault.body) } : {}) },
                  }),
                );
              },
              remove: async (faultId) => {
                const { response, error } = await client.DELETE("/_mock/v1/apps/{appId}/faults/{faultId}", {
                  params: { path: { appId, faultId } },
                });
                if (!response.ok) throw new Error(error?.error ?? `${response.status}`);
              },
              clear: async () => {
                await unwrap(client.DELETE("/_mock/v1/apps/{appId}/faults", { params: { path } }));
              },
            },
            refresh,
            details.functions,
          ),
          clockSection(
            clock,
            {
              advance: async (advanceBy) => {
                await unwrap(client.POST("/_mock/v1/apps/{appId}/clock", { params: { path }, body: { advanceBy } }));
              },
              reset: async () => {
                await unwrap(client.DELETE("/_mock/v1/apps/{appId}/clock", { params: { path } }));
              },
            },
            refresh,
          ),
        );
      }
    }
  }
  return {
    title: `App ${appId}`,
    // Only the events that change this tab, so reading a mail or a request is not interrupted by unrelated traffic.
    affectedBy: (event: ControlEvent) =>
      appOf(event) === appId && (event.type === "app" || liveTypes[tab].includes(event.type)),
    async render() {
      const [details, content] = await Promise.all([
        unwrap(client.GET("/_mock/v1/apps/{appId}", { params: { path } })),
        panel(),
      ]);
      const reset = async (event: Event) => {
        if (
          !(await confirmDialog(
            `Reset the app ${appId}? Its users, sessions, data, mail, faults and journal are deleted.`,
            "Reset app",
          ))
        )
          return;
        await action(async () => {
          await unwrap(client.POST("/_mock/v1/apps/{appId}/reset", { params: { path } }));
          return `App ${appId} reset.`;
        }, refresh)(event);
      };
      return h(
        "div",
        null,
        h("h2", { id: "view-heading", tabindex: -1 }, `App ${appId}`),
        fields([
          ["Created", time(details.createdAt)],
          ["Users", `${details.users} (${details.pendingUsers} pending)`],
          ["Captured mail", String(details.mail)],
          ["Open change streams", String(details.watchers)],
          [
            "Clock",
            [
              clockTime(details.clock.now),
              details.clock.offsetMs !== 0 ? ` (+${details.clock.offsetMs / 1000} s)` : "",
            ],
          ],
          ["Functions", details.functions.join(", ") || "none"],
          [
            "HTTPS endpoints",
            (details.config.endpoints ?? [])
              .filter((e) => e.disabled !== true)
              .map((e) => `${e.httpMethod === "*" ? "ANY" : e.httpMethod} ${e.route}`)
              .join(", ") || "none",
          ],
          [
            "Data API",
            details.config.dataApi && details.config.dataApi.disabled !== true
              ? `POST /app/${appId}/endpoint/data/v1/action/<action>`
              : "off",
          ],
        ]),
        suspendedTriggers(appId, details.suspendedTriggers, refresh),
        h("div", { class: "actions" }, h("button", { type: "button", class: "danger", onclick: reset }, "Reset app…")),
        sectionNav(
          `Sections of ${appId}`,
          tabs.map(([id, text]) => ({ href: `${base}/${id}`, text, current: id === tab })),
        ),
        content,
      );
    },
  };
}

export function isAppTab(value: string | undefined): value is AppTab {
  return tabs.some(([id]) => id === value);
}

/**
 * The app's database triggers suspended because their collection was dropped or renamed over
 * (decision 0057), each with why and since when, and a button that resumes it; nothing when none is.
 */
function suspendedTriggers(
  appId: string,
  suspended: { name: string; since: string; reason: string }[],
  refresh: () => void,
): Node | null {
  if (suspended.length === 0) return null;
  return h(
    "section",
    { "aria-labelledby": "suspended-triggers" },
    h("h3", { id: "suspended-triggers" }, "Suspended triggers"),
    h(
      "ul",
      null,
      ...suspended.map(({ name, since, reason }) =>
        h(
          "li",
          null,
          h("strong", null, name),
          `: ${reason}, since `,
          time(since),
          " ",
          h(
            "button",
            {
              type: "button",
              "aria-label": `Resume ${name}`,
              onclick: action(async () => {
                const { response, error } = await client.POST("/_mock/v1/apps/{appId}/triggers/{triggerName}/resume", {
                  params: { path: { appId, triggerName: name } },
                });
                if (!response.ok) throw new Error(error?.error ?? `${response.status}`);
                return `Trigger ${name} resumed: it runs again from the next change.`;
              }, refresh),
            },
            "Resume",
          ),
        ),
      ),
    ),
  );
}
