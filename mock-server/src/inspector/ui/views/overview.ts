/** The start page: the emulator, its apps and EmailJS accounts. */
import { client, unwrap } from "../api.ts";
import { fields, h, table, time } from "../dom.ts";
import type { View } from "../view.ts";

export function overviewView(): View {
  return {
    title: "Overview",
    affectedBy: (event) =>
      event.type === "app" ||
      event.type === "account" ||
      event.type === "mail" ||
      (event.type === "user" && event.action !== "logged-in"),
    async render() {
      const [health, { apps }, { accounts }] = await Promise.all([
        unwrap(client.GET("/_mock/v1/health")),
        unwrap(client.GET("/_mock/v1/apps")),
        unwrap(client.GET("/_mock/v1/emailjs/accounts")),
      ]);
      return h(
        "div",
        null,
        h("h2", { id: "view-heading", tabindex: -1 }, "Overview"),
        fields([
          ["Version", health.version],
          ["Started", time(health.startedAt)],
        ]),
        h("h3", null, "Apps"),
        table(
          `${apps.length} app${apps.length === 1 ? "" : "s"}`,
          ["App id", "Users", "Pending", "Mail", "Created"],
          apps.map((a) => [
            h("a", { href: `#/apps/${encodeURIComponent(a.appId)}/users` }, a.appId),
            String(a.users),
            String(a.pendingUsers),
            String(a.mail),
            time(a.createdAt),
          ]),
          "No apps.",
        ),
        h("h3", null, "EmailJS accounts"),
        table(
          `${accounts.length} account${accounts.length === 1 ? "" : "s"}`,
          ["Public key", "Templates", "Rate limit", "Non-browser calls"],
          accounts.map((a) => [
            h("a", { href: `#/emailjs/${encodeURIComponent(a.publicKey)}/mail` }, a.publicKey),
            a.templates.map((t) => t.id).join(", ") || "none",
            a.rateLimitPerSecond > 0 ? `${a.rateLimitPerSecond}/s` : "off",
            a.allowNonBrowser ? "allowed" : "refused",
          ]),
          "No accounts.",
        ),
      );
    },
  };
}
