/**
 * Captured mail: a searchable list and the selected message in tabs — its HTML in a sandboxed frame
 * (mail-frame.ts: no scripts, remote images only on request), its text, headers and source — and
 * a delete button.
 */
import { client, type Schemas, unwrap } from "../api.ts";
import { fields, h, json, sectionNav, table, time } from "../dom.ts";
import { hasRemoteImages, mailFrameDocument, mailFrameSandbox } from "../mail-frame.ts";
import { action, navigate, searchForm, withQuery } from "../view.ts";

type MailMessage = Schemas["MailMessage"];
export interface MailFilter {
  appId?: string;
  account?: string;
}

const mailTabs = [
  ["html", "HTML"],
  ["text", "Text"],
  ["headers", "Headers"],
  ["source", "Source"],
] as const;
type MailTab = (typeof mailTabs)[number][0];
const isMailTab = (value: string | undefined): value is MailTab => mailTabs.some(([id]) => id === value);

/** Messages whose remote images a person chose to load (this page only). */
const imagesAllowed = new Set<string>();

/** Where the panel's links go: the list (with its search) or a message's tab. */
export interface MailLinks {
  list: (search?: string) => string;
  message: (id: string, tab?: string) => string;
}

function htmlTab(message: MailMessage, refresh: () => void): Node {
  const allowed = imagesAllowed.has(message.id);
  const toggle = () => {
    if (allowed) imagesAllowed.delete(message.id);
    else imagesAllowed.add(message.id);
    refresh();
  };
  return h(
    "div",
    null,
    h(
      "div",
      { class: "actions images" },
      h(
        "p",
        { class: "meta" },
        allowed
          ? "Remote images are loaded for this message."
          : `Remote images are blocked${hasRemoteImages(message.html) ? " (this message has some)" : ""}.`,
      ),
      h(
        "button",
        { type: "button", "aria-pressed": allowed ? "true" : "false", onclick: toggle, "data-key": "load-images" },
        "Load remote images",
      ),
    ),
    h("iframe", {
      class: "mail-body",
      title: `E-mail body: ${message.subject}`,
      sandbox: mailFrameSandbox,
      referrerpolicy: "no-referrer",
      srcdoc: mailFrameDocument(message.html, { loadImages: allowed }),
    }),
  );
}

async function sourceTab(message: MailMessage, tab: "headers" | "source"): Promise<Node> {
  const { headers, source } = await unwrap(
    client.GET("/_mock/v1/mail/{messageId}/source", { params: { path: { messageId: message.id } } }),
  );
  if (tab === "source") return h("pre", { class: "source", tabindex: 0, "aria-label": "Message source" }, source);
  return table(
    `${headers.length} headers, as sent over SMTP`,
    ["Header", "Value"],
    headers.map((header) => [h("code", null, header.name), header.value]),
    "No headers.",
  );
}

async function detail(message: MailMessage, tab: MailTab, links: MailLinks, refresh: () => void): Promise<Node> {
  const remove = action(async () => {
    await unwrap(client.DELETE("/_mock/v1/mail/{messageId}", { params: { path: { messageId: message.id } } }));
    navigate(links.list(), refresh);
    return `Deleted the message ${message.subject || message.id}.`;
  }, refresh);
  const body =
    tab === "html"
      ? htmlTab(message, refresh)
      : tab === "text"
        ? h("pre", { class: "mail-text", tabindex: 0 }, message.text)
        : await sourceTab(message, tab);
  return h(
    "article",
    { "aria-labelledby": "mail-subject" },
    h("h3", { id: "mail-subject" }, message.subject || "(no subject)"),
    fields([
      ["From", message.fromName ? `${message.fromName} <${message.from}>` : message.from],
      [
        "To",
        message.appId
          ? [
              message.to,
              " · ",
              h(
                "a",
                { href: withQuery(`#/apps/${encodeURIComponent(message.appId)}/users`, { email: message.to }) },
                "find the user",
              ),
            ]
          : message.to,
      ],
      ["Reply-To", message.replyTo],
      ["Source", message.source === "emailjs" ? `EmailJS (${message.account})` : `App Services (${message.appId})`],
      ["Kind", message.kind],
      ["Received", time(message.createdAt)],
      ["Token", message.token],
      ["Token id", message.tokenId],
      ["Delivery", message.delivery ? `${message.delivery.state} (${message.delivery.attempts} attempts)` : undefined],
    ]),
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        { type: "button", class: "danger", onclick: remove, "data-key": `delete-mail-${message.id}` },
        "Delete message",
      ),
    ),
    message.links.length > 0
      ? [
          h("h4", null, "Links (open in a new tab)"),
          h(
            "ul",
            { class: "links" },
            // (Only http(s) ones are links: a message kept before imports checked them shows others as text.)
            message.links.map((link) =>
              h(
                "li",
                null,
                /^https?:\/\//i.test(link)
                  ? h("a", { href: link, target: "_blank", rel: "noopener noreferrer" }, link)
                  : link,
              ),
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
    sectionNav(
      "Message views",
      mailTabs.map(([id, text]) => ({ href: links.message(message.id, id), text, current: id === tab })),
    ),
    body,
    message.templateParams ? [h("h4", null, "Template parameters"), json(message.templateParams)] : null,
  );
}

/** The messages a list shows: the newest, as a production database keeps 30 days of mail. */
const shownMessages = 200;

/** The mail panel: `selected` is the open message, `tab` its view, `search` the list's filter. */
export async function mailPanel(
  filter: MailFilter,
  selected: string | undefined,
  tab: string | undefined,
  search: string,
  links: MailLinks,
  refresh: () => void,
): Promise<Node> {
  const [{ messages, total }, chosen] = await Promise.all([
    unwrap(
      client.GET("/_mock/v1/mail", {
        params: { query: { ...filter, ...(search ? { search } : {}), limit: shownMessages } },
      }),
    ),
    selected
      ? client.GET("/_mock/v1/mail/{messageId}", { params: { path: { messageId: selected } } }).then((r) => r.data)
      : undefined,
  ]);
  const newest = [...messages].reverse();
  const list = table(
    `${total > messages.length ? `The newest ${messages.length.toLocaleString("en")} of ` : ""}${total.toLocaleString("en")} ${search ? "matching" : "captured"} message${total === 1 ? "" : "s"}, newest first`,
    ["Received", "To", "Subject", "Kind"],
    newest.map((m) => [
      time(m.createdAt),
      m.to,
      h(
        "a",
        { href: links.message(m.id), "aria-current": m.id === selected ? "true" : null },
        m.subject || "(no subject)",
      ),
      m.kind,
    ]),
    search ? "No message matches." : "No mail captured yet.",
    (i) => ({ class: newest[i]?.id === selected ? "selected" : null }),
  );
  return h(
    "div",
    { class: "mail" },
    h(
      "section",
      { "aria-label": "Messages" },
      searchForm({
        id: "mail-search",
        label: "Subject, recipient or text",
        name: "Search mail",
        button: "Search",
        value: search,
        list: links.list,
        refresh,
      }),
      list,
    ),
    h(
      "section",
      { "aria-label": "Message" },
      chosen
        ? await detail(chosen, isMailTab(tab) ? tab : "html", links, refresh)
        : h("p", { class: "empty" }, selected ? `Message ${selected} is gone.` : "Select a message to read it."),
    ),
  );
}

/** The links of a mail panel under `base` (`#/mail`, `#/apps/x/mail`…); a message keeps the list's search. */
export function mailLinks(base: string, search: string): MailLinks {
  return {
    list: (text = search) => withQuery(base, { search: text }),
    message: (id, tab) =>
      withQuery(`${base}/${encodeURIComponent(id)}${tab && tab !== "html" ? `/${tab}` : ""}`, { search }),
  };
}
