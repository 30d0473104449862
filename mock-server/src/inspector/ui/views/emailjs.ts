/** One EmailJS account: its settings and templates, mail, request journal, faults and clock. */
import { client, unwrap } from "../api.ts";
import { fields, h, sectionNav, table } from "../dom.ts";
import { accountOf, type ControlEvent } from "../live.ts";
import type { View } from "../view.ts";
import { clockSection, faultsSection } from "./faults.ts";
import { journalPanel } from "./journal.ts";
import { mailLinks, mailPanel } from "./mail.ts";

const tabs = [
  ["mail", "Mail"],
  ["templates", "Templates"],
  ["requests", "Requests"],
  ["faults", "Faults & clock"],
] as const;
export type AccountTab = (typeof tabs)[number][0];

const liveTypes: Record<AccountTab, ControlEvent["type"][]> = {
  mail: ["mail"],
  templates: [],
  requests: ["request", "fault"],
  faults: ["fault", "clock"],
};

export function isAccountTab(value: string | undefined): value is AccountTab {
  return tabs.some(([id]) => id === value);
}

export function emailJsView(
  publicKey: string,
  tab: AccountTab,
  rest: string[],
  query: URLSearchParams,
  refresh: () => void,
): View {
  const path = { publicKey };
  const base = `#/emailjs/${encodeURIComponent(publicKey)}`;
  async function panel(): Promise<Node> {
    switch (tab) {
      case "mail": {
        const search = query.get("search") ?? "";
        return mailPanel({ account: publicKey }, rest[0], rest[1], search, mailLinks(`${base}/mail`, search), refresh);
      }
      case "templates": {
        const account = await unwrap(client.GET("/_mock/v1/emailjs/accounts/{publicKey}", { params: { path } }));
        return table(
          `${account.templates.length} template${account.templates.length === 1 ? "" : "s"}`,
          ["Template id", "Subject", "To", "From", "Reply-To"],
          account.templates.map((t) => [
            h("code", null, t.id),
            t.subject ?? "",
            t.to ?? "",
            t.fromName ? `${t.fromName} <${t.from ?? ""}>` : (t.from ?? ""),
            t.replyTo ?? "",
          ]),
          "No templates.",
        );
      }
      case "requests":
        return journalPanel(
          {
            base: `${base}/requests`,
            operations: ["sendEmail", "sendForm"],
            list: async (filter) =>
              (
                await unwrap(
                  client.GET("/_mock/v1/emailjs/accounts/{publicKey}/requests", {
                    params: { path, query: { ...filter, limit: 10000 } },
                  }),
                )
              ).requests,
            clear: async () => {
              const { response } = await client.DELETE("/_mock/v1/emailjs/accounts/{publicKey}/requests", {
                params: { path },
              });
              if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
            },
          },
          rest[0],
          query,
          refresh,
        );
      case "faults": {
        const [{ faults }, clock] = await Promise.all([
          unwrap(client.GET("/_mock/v1/emailjs/accounts/{publicKey}/faults", { params: { path } })),
          unwrap(client.GET("/_mock/v1/emailjs/accounts/{publicKey}/clock", { params: { path } })),
        ]);
        return h(
          "div",
          null,
          faultsSection(
            faults,
            ["sendEmail", "sendForm"],
            {
              add: async (fault) => {
                await unwrap(
                  client.POST("/_mock/v1/emailjs/accounts/{publicKey}/faults", { params: { path }, body: fault }),
                );
              },
              remove: async (faultId) => {
                const { response, error } = await client.DELETE(
                  "/_mock/v1/emailjs/accounts/{publicKey}/faults/{faultId}",
                  { params: { path: { publicKey, faultId } } },
                );
                if (!response.ok) throw new Error(error?.error ?? `${response.status}`);
              },
              clear: async () => {
                await unwrap(client.DELETE("/_mock/v1/emailjs/accounts/{publicKey}/faults", { params: { path } }));
              },
            },
            refresh,
          ),
          clockSection(
            clock,
            {
              advance: async (advanceBy) => {
                await unwrap(
                  client.POST("/_mock/v1/emailjs/accounts/{publicKey}/clock", {
                    params: { path },
                    body: { advanceBy },
                  }),
                );
              },
              reset: async () => {
                await unwrap(client.DELETE("/_mock/v1/emailjs/accounts/{publicKey}/clock", { params: { path } }));
              },
            },
            refresh,
          ),
        );
      }
    }
  }
  return {
    title: `EmailJS ${publicKey}`,
    affectedBy: (event: ControlEvent) =>
      accountOf(event) === publicKey && (event.type === "account" || liveTypes[tab].includes(event.type)),
    async render() {
      const [account, content] = await Promise.all([
        unwrap(client.GET("/_mock/v1/emailjs/accounts/{publicKey}", { params: { path } })),
        panel(),
      ]);
      return h(
        "div",
        null,
        h("h2", { id: "view-heading", tabindex: -1 }, `EmailJS account ${publicKey}`),
        fields([
          [
            "Services",
            account.services.map((s) => `${s.id}${s.provider ? ` (${s.provider})` : ""}`).join(", ") || "none",
          ],
          ["Default service", account.defaultServiceId],
          ["Rate limit", account.rateLimitPerSecond > 0 ? `${account.rateLimitPerSecond} per second` : "off"],
          ["Private key", account.requirePrivateKey ? "required" : "not required"],
          ["Non-browser calls", account.allowNonBrowser ? "allowed" : "refused (403)"],
        ]),
        sectionNav(
          `Sections of ${publicKey}`,
          tabs.map(([id, text]) => ({ href: `${base}/${id}`, text, current: id === tab })),
        ),
        content,
      );
    },
  };
}
