/** What the router shows: a title, how to render it, and which live events make it stale. */
import { h } from "./dom.ts";
import type { ControlEvent } from "./live.ts";

export interface View {
  title: string;
  render(): Promise<Node>;
  /** True when this event changes what the view shows (it is then re-rendered). */
  affectedBy(event: ControlEvent): boolean;
}

const announcer = () => document.getElementById("announcer");

/** The part of the hash after `?`: a view's filters (so they are in the address and survive re-renders). */
export function hashQuery(): URLSearchParams {
  const hash = location.hash;
  const at = hash.indexOf("?");
  return new URLSearchParams(at < 0 ? "" : hash.slice(at + 1));
}

/** The hash with these query values (empty ones dropped). */
export function withQuery(path: string, values: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value) query.set(name, value);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

let keepFocus = false;
/** Goes to a hash as a filter form does: the view re-renders, focus stays where it is. */
export function navigate(hash: string, refresh: () => void): void {
  if (location.hash === hash) {
    refresh();
    return;
  }
  keepFocus = true;
  location.hash = hash;
}

/** True once after `navigate` (the router then leaves focus alone). */
export function takeKeepFocus(): boolean {
  const keep = keepFocus;
  keepFocus = false;
  return keep;
}

/** Tells assistive technology (and sighted users, via the button state) what an action did. */
let clearing: ReturnType<typeof setTimeout> | undefined;
export function announce(text: string): void {
  const node = announcer();
  if (!node) return;
  node.textContent = text;
  // The note is shown to sighted users too; it goes after a while so it covers nothing for long.
  clearTimeout(clearing);
  clearing = setTimeout(() => {
    if (node.textContent === text) node.textContent = "";
  }, 8000);
}

/** A button action: disabled while it runs; its outcome is announced; `done` re-renders. */
export function action(run: () => Promise<string>, done: () => void): (event: Event) => void {
  return async (event) => {
    event.preventDefault();
    const target = event.currentTarget as HTMLButtonElement | HTMLFormElement;
    const button = target instanceof HTMLFormElement ? target.querySelector("button[type=submit]") : target;
    if (button instanceof HTMLButtonElement) button.disabled = true;
    try {
      announce(await run());
      done();
    } catch (error) {
      announce(`Failed: ${(error as Error).message}`);
    } finally {
      if (button instanceof HTMLButtonElement) button.disabled = false;
    }
  };
}

/** Asks before a destructive action, in an accessible modal dialog; resolves true on confirm. */
export function confirmDialog(question: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dialog = document.createElement("dialog");
    dialog.setAttribute("aria-labelledby", "confirm-question");
    const text = document.createElement("p");
    text.id = "confirm-question";
    text.textContent = question;
    const yes = document.createElement("button");
    yes.className = "danger";
    yes.textContent = confirmLabel;
    const no = document.createElement("button");
    no.textContent = "Cancel";
    const row = document.createElement("div");
    row.className = "actions";
    row.append(yes, no);
    dialog.append(text, row);
    const finish = (answer: boolean) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    yes.addEventListener("click", () => finish(true));
    no.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", () => finish(false));
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

/**
 * A list's search box (the users' e-mail, the mail's text): `list(text)` is the list's address with
 * that search, the text kept in it; "Show all" while one is shown.
 */
export function searchForm(options: {
  id: string;
  label: string;
  name: string;
  button: string;
  value: string;
  list: (text: string) => string;
  refresh: () => void;
  maxLength?: number;
}): HTMLElement {
  const { id, label, name, button, value, list, refresh, maxLength } = options;
  const onSearch = (event: Event) => {
    event.preventDefault();
    navigate(list((document.getElementById(id) as HTMLInputElement).value.trim()), refresh);
  };
  return h(
    "form",
    { class: "inline", role: "search", "aria-label": name, onsubmit: onSearch },
    h(
      "label",
      null,
      label,
      h("input", {
        id,
        type: "search",
        value,
        "data-key": id,
        ...(maxLength === undefined ? {} : { maxlength: maxLength }),
      }),
    ),
    h("button", { type: "submit" }, button),
    value ? h("a", { href: list("") }, "Show all") : null,
  );
}
