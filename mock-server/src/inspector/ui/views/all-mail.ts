/** Every captured e-mail, from both services. */
import { h } from "../dom.ts";
import type { View } from "../view.ts";
import { mailLinks, mailPanel } from "./mail.ts";

export function allMailView(
  selected: string | undefined,
  tab: string | undefined,
  query: URLSearchParams,
  refresh: () => void,
): View {
  const search = query.get("search") ?? "";
  return {
    title: "All mail",
    affectedBy: (event) => event.type === "mail",
    async render() {
      return h(
        "div",
        null,
        h("h2", { id: "view-heading", tabindex: -1 }, "All mail"),
        await mailPanel({}, selected, tab, search, mailLinks("#/mail", search), refresh),
      );
    },
  };
}
