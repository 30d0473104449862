/**
 * Showing rendered pages in the inspector's main area. Renders are asynchronous and overlap (a
 * live update, a click on a link): only the newest render of the address still shown is put on
 * the page. Re-rendering replaces the DOM, so what the user was doing on a page (open details,
 * typed values, focus) is carried over when the same address is shown again; a new address (another
 * page, a filter applied or cleared) shows its own values.
 */

/** Shows one render's page; false when it was dropped (a newer render, or the address changed). */
export type ShowPage = (next: Node) => boolean;

export interface Pages {
  /** A render starts for the address shown now: what it makes is shown through the answer. */
  begin(): ShowPage;
}

export function pages(main: HTMLElement, address: () => string = () => location.hash): Pages {
  let shownAddress: string | null = null;
  let generation = 0;

  function swap(next: Node, at: string): void {
    const samePage = shownAddress === at;
    shownAddress = at;
    // A live update that changes nothing shown keeps the page as it is: a click or a selection in
    // progress is not cut off by a new copy of the same elements.
    if (samePage && main.childNodes.length === 1 && main.firstChild!.isEqualNode(next)) return;
    const state = new Map<string, { open?: boolean; value?: string }>();
    for (const element of samePage ? Array.from(main.querySelectorAll<HTMLElement>("[data-key]")) : []) {
      const key = element.dataset.key!;
      if (element.tagName === "DETAILS") state.set(key, { open: (element as HTMLDetailsElement).open });
      if (element.tagName === "INPUT" || element.tagName === "SELECT" || element.tagName === "TEXTAREA") {
        state.set(key, { value: (element as HTMLInputElement).value });
      }
    }
    const focused = (main.ownerDocument.activeElement as HTMLElement | null)?.dataset?.key;
    main.replaceChildren(next);
    for (const element of Array.from(main.querySelectorAll<HTMLElement>("[data-key]"))) {
      const saved = state.get(element.dataset.key!);
      if (!saved) continue;
      if (element.tagName === "DETAILS" && saved.open !== undefined) (element as HTMLDetailsElement).open = saved.open;
      if ("value" in element && saved.value !== undefined) (element as HTMLInputElement).value = saved.value;
    }
    if (focused) main.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
  }

  return {
    begin() {
      const mine = ++generation;
      const at = address();
      return (next) => {
        // A newer render won; or the address moved on while this one rendered (its navigation's
        // own render is coming: showing this one under the new address would carry the old
        // page's typed values into the new page's form).
        if (mine !== generation || address() !== at) return false;
        swap(next, at);
        return true;
      };
    },
  };
}
