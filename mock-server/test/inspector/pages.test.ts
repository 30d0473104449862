// @vitest-environment jsdom
/**
 * How the inspector puts rendered pages on screen: the newest render of the address shown wins;
 * a live re-render of the same address keeps what the user typed and opened; a render that
 * finishes after its address was left is dropped, so a page never shows another's form values.
 */
import { describe, expect, it } from "vitest";
import { pages } from "../../src/inspector/ui/pages.ts";

/** A journal-like page: a status field and a details element, as the views make them. */
function page(status: string, rows: number): Node {
  const root = document.createElement("div");
  const input = document.createElement("input");
  input.dataset.key = "status";
  input.setAttribute("value", status);
  const details = document.createElement("details");
  details.dataset.key = "row-1";
  details.append(document.createElement("summary"));
  root.append(input, details, `${rows} requests`);
  return root;
}

function setup() {
  const main = document.createElement("main");
  document.body.replaceChildren(main);
  let address = "#/apps/a/requests";
  const shown = pages(main, () => address);
  const status = () => main.querySelector<HTMLInputElement>('[data-key="status"]')!.value;
  return { main, shown, status, go: (to: string) => (address = to) };
}

describe("inspector pages", () => {
  it("keeps typed values and open details through a re-render of the same address, not onto another", () => {
    const { main, shown, status, go } = setup();
    expect(shown.begin()(page("", 3))).toBe(true);
    main.querySelector<HTMLInputElement>('[data-key="status"]')!.value = "40";
    main.querySelector("details")!.open = true;
    expect(shown.begin()(page("", 4))).toBe(true);
    expect(status()).toBe("40");
    expect(main.querySelector("details")!.open).toBe(true);
    expect(main.textContent).toContain("4 requests");
    go("#/apps/a/requests?status=401");
    expect(shown.begin()(page("401", 1))).toBe(true);
    expect(status()).toBe("401");
    expect(main.querySelector("details")!.open).toBe(false);
  });

  it("drops a render that finishes after its address was left, and shows the new address's own values", () => {
    const { main, shown, status, go } = setup();
    go("#/apps/a/requests?status=401");
    shown.begin()(page("401", 1));
    // A live update starts rendering the filtered page; meanwhile "Show all" is clicked.
    const update = shown.begin();
    go("#/apps/a/requests");
    expect(update(page("401", 1))).toBe(false);
    expect(main.textContent).toContain("1 requests");
    // The navigation's own render: the unfiltered page with an empty status field.
    expect(shown.begin()(page("", 3))).toBe(true);
    expect(status()).toBe("");
    expect(main.textContent).toContain("3 requests");
  });

  it("shows only the newest of overlapping renders", () => {
    const { main, shown } = setup();
    const older = shown.begin();
    const newer = shown.begin();
    expect(newer(page("", 2))).toBe(true);
    expect(older(page("", 1))).toBe(false);
    expect(main.textContent).toContain("2 requests");
  });
});
