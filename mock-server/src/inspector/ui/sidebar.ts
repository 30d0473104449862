/** The navigation: apps, EmailJS accounts, all mail; the current one is marked. */
import { client, unwrap } from "./api.ts";
import { h } from "./dom.ts";

/** `section` is the hash prefix of the item's pages (its tabs and records): the item is current there. */
function links(items: { href: string; section: string; text: string }[], empty: string): Node {
  if (items.length === 0) return h("p", { class: "empty" }, empty);
  const current = location.hash;
  return h(
    "ul",
    null,
    items.map((item) =>
      h(
        "li",
        null,
        h(
          "a",
          {
            href: item.href,
            "aria-current": current === item.section || current.startsWith(`${item.section}/`) ? "page" : null,
          },
          item.text,
        ),
      ),
    ),
  );
}

export async function renderSidebar(target: HTMLElement): Promise<void> {
  const [{ apps }, { accounts }] = await Promise.all([
    unwrap(client.GET("/_mock/v1/apps")),
    unwrap(client.GET("/_mock/v1/emailjs/accounts")),
  ]);
  target.replaceChildren(
    h("h2", { id: "nav-apps" }, "Apps"),
    links(
      apps.map((a) => {
        const section = `#/apps/${encodeURIComponent(a.appId)}`;
        return { href: `${section}/users`, section, text: a.appId };
      }),
      "No apps.",
    ),
    h("h2", null, "EmailJS accounts"),
    links(
      accounts.map((a) => {
        const section = `#/emailjs/${encodeURIComponent(a.publicKey)}`;
        return { href: `${section}/mail`, section, text: a.publicKey };
      }),
      "No accounts.",
    ),
    h("h2", null, "Mail"),
    links([{ href: "#/mail", section: "#/mail", text: "All captured mail" }], ""),
  );
}
