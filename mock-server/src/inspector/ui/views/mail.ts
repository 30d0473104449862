/** Captured mail: a list and the selected message, its HTML in a sandboxed frame (no scripts; links open outside). */
import { client, type Schemas, unwrap } from "../api.ts";
import { fields, h, json, table, time } from "../dom.ts";

type MailMessage = Schemas["MailMessage"];
export interface MailFilter {
  appId?: string;
  account?: string;
}

function srcdoc(message: MailMessage): string {
  // <base target="_blank">: a link in the mail opens a new tab (the sandbox allows popups, not scripts).
  return `<!doctype html><html><head><meta charset="utf-8"><base target="_blank"></head><body>${message.html}</body></html>`;
}

function detail(message: MailMessage): HTMLElement {
  return h(
    "article",
    { "aria-labelledby": "mail-subject" },
    h("h3", { id: "mail-subject" }, message.subject || "(no subject)"),
    fields([
      ["From", message.fromName ? `${message.fromName} <${message.from}>` : message.from],
      ["To", message.to],
      ["Reply-To", message.replyTo],
      ["Source", message.source === "emailjs" ? `EmailJS (${message.account})` : `App Services (${message.appId})`],
      ["Kind", message.kind],
      ["Received", time(message.createdAt)],
      ["Token", message.token],
      ["Token id", message.tokenId],
    ]),
    message.links.length > 0
      ? [
          h("h4", null, "Links"),
          h(
            "ul",
            null,
            message.links.map((link) =>
              h("li", null, h("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, link)),
            ),
          ),
        ]
      : null,
    message.attachments.length > 0
      ? [
          h("h4", null, "Attachments"),
          h(
            "ul",
            null,
            message.attachments.map((a) =>
              h("li", null, `${a.filename} (${a.contentType ?? "unknown type"}, ${a.size} bytes, field ${a.field})`),
            ),
          ),
        ]
      : null,
    h("h4", null, "HTML"),
    h("iframe", {
      class: "mail-body",
      title: `E-mail body: ${message.subject}`,
      sandbox: "allow-popups allow-popups-to-escape-sandbox",
      referrerpolicy: "no-referrer",
      srcdoc: srcdoc(message),
    }),
    h("h4", null, "Text"),
    h("pre", null, message.text),
    message.templateParams ? [h("h4", null, "Template parameters"), json(message.templateParams)] : null,
  );
}

/** The mail panel; `href(id)` links a message, `selected` is the open one. */
export async function mailPanel(
  filter: MailFilter,
  selected: string | undefined,
  href: (id: string) => string,
): Promise<Node> {
  const { messages } = await unwrap(client.GET("/_mock/v1/mail", { params: { query: filter } }));
  const newest = [...messages].reverse();
  const current = selected ? newest.find((m) => m.id === selected) : undefined;
  const list = table(
    `${messages.length} captured message${messages.length === 1 ? "" : "s"}, newest first`,
    ["Received", "To", "Subject", "Kind"],
    newest.map((m) => [
      time(m.createdAt),
      m.to,
      h("a", { href: href(m.id), "aria-current": m.id === selected ? "true" : null }, m.subject || "(no subject)"),
      m.kind,
    ]),
    "No mail captured yet.",
    (i) => ({ class: newest[i]?.id === selected ? "selected" : null }),
  );
  return h(
    "div",
    { class: "mail" },
    h("section", { "aria-label": "Messages" }, list),
    h(
      "section",
      { "aria-label": "Message" },
      current
        ? detail(current)
        : h("p", { class: "empty" }, selected ? `Message ${selected} is gone.` : "Select a message to read it."),
    ),
  );
}
