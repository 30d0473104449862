/** What the router shows: a title, how to render it, and which live events make it stale. */
import type { ControlEvent } from "./live.ts";

export interface View {
  title: string;
  render(): Promise<Node>;
  /** True when this event changes what the view shows (it is then re-rendered). */
  affectedBy(event: ControlEvent): boolean;
}

const announcer = () => document.getElementById("announcer");

/** Tells assistive technology (and sighted users, via the button state) what an action did. */
export function announce(text: string): void {
  const node = announcer();
  if (node) node.textContent = text;
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
