/** Every captured e-mail, from both services. */
import { h } from "../dom.ts";
import type { View } from "../view.ts";
import { mailPanel } from "./mail.ts";

export function allMailView(selected: string | undefined): View {
  return {
    title: "All mail",
    affectedBy: (event) => event.type === "mail",
    async render() {
      return h(
        "div",
        null,
        h("h2", { id: "view-heading", tabindex: -1 }, "All mail"),
        await mailPanel({}, selected, (id) => `#/mail/${encodeURIComponent(id)}`),
      );
    },
  };
}
