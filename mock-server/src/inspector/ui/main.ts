/**
 * The inspector: a hash router over the views, kept live by the control API's event stream. Views
 * re-render when an event concerns them; open details, form values and focus survive a re-render.
 * An app made, changed or deleted that the page shown does not concern updates the sidebar alone.
 */
import { ApiError, hasControlToken, setControlToken } from "./api.ts";
import { h } from "./dom.ts";
import { subscribe } from "./live.ts";
import { pages } from "./pages.ts";
import { renderSidebar } from "./sidebar.ts";
import { hashQuery, takeKeepFocus, type View } from "./view.ts";
import { allMailView } from "./views/all-mail.ts";
import { appView, isAppTab } from "./views/app.ts";
import { emailJsView, isAccountTab } from "./views/emailjs.ts";
import { overviewView } from "./views/overview.ts";

const main = document.getElementById("main")!;
const sidebar = document.getElementById("sidebar")!;
const connection = document.getElementById("connection")!;

function route(): View {
  const path = location.hash.replace(/^#\/?/, "").split("?")[0] ?? "";
  const parts = path.split("/").filter(Boolean).map(decoded);
  const [area, id, tab, ...rest] = parts;
  const query = hashQuery();
  if (area === "apps" && id) return appView(id, isAppTab(tab) ? tab : "users", rest, query, refreshSoon);
  if (area === "emailjs" && id) return emailJsView(id, isAccountTab(tab) ? tab : "mail", rest, query, refreshSoon);
  if (area === "mail") return allMailView(id, tab, query, refreshSoon);
  return overviewView();
}

/** A part of the address as it was meant; one with a malformed escape (`%E0%A4`) as it is. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

const page = pages(main);

function tokenForm(): Node {
  const refused = hasControlToken();
  const onSubmit = (event: Event) => {
    event.preventDefault();
    setControlToken((document.getElementById("control-token") as HTMLInputElement).value.trim());
    restartLive();
    void show(true);
  };
  return h(
    "form",
    { class: "inline", onsubmit: onSubmit, "aria-labelledby": "token-heading" },
    h("h2", { id: "token-heading", tabindex: -1 }, "Control token required"),
    h("p", null, "This emulator's control API needs the control token it was started with (--control-token)."),
    refused ? h("p", { class: "error", role: "alert" }, "The control token given was not accepted.") : null,
    h(
      "label",
      null,
      "Control token",
      h("input", { id: "control-token", type: "password", autocomplete: "off", required: true }),
    ),
    h("button", { type: "submit", class: "primary" }, "Use token"),
  );
}

let current: View = route();

async function show(moveFocus: boolean): Promise<void> {
  const shown = page.begin();
  current = route();
  let node: Node;
  try {
    node = await current.render();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) node = tokenForm();
    else
      node = h(
        "div",
        { role: "alert" },
        h("h2", { id: "view-heading", tabindex: -1 }, "Cannot show this page"),
        h("p", { class: "error" }, (error as Error).message),
      );
  }
  if (!shown(node)) return;
  document.title = `${current.title} · Emulator inspector`;
  if (moveFocus) {
    main.querySelector<HTMLElement>("#view-heading")?.focus();
    // A link to one record (e.g. an error's `link` to its journal entry) shows that record.
    main.querySelector("tr.selected")?.scrollIntoView({ block: "center" });
  }
  renderSidebar(sidebar).catch(() => {});
}

let timer: ReturnType<typeof setTimeout> | null = null;
let lastLiveRender = 0;
/** How long the last live re-render took, from its start to its page shown. */
let lastRenderMs = 0;
/** Whether a live re-render is under way, and whether events came meanwhile. */
let rendering = false;
let eventsWhileRendering = false;
/**
 * Coalesces bursts of events (a seed of 1,000 documents) into one re-render, and re-renders at most
 * once a second while events keep coming, or once every ten times the last live render took when
 * that is longer: each render reads its page's data again (on a production database, counts over
 * a million documents), and a busy production instance sends events all the time — the page keeps
 * to a tenth of the time it has.
 */
function refreshSoon(): void {
  if (timer) return;
  // The next one is timed once this one's length is known.
  if (rendering) {
    eventsWhileRendering = true;
    return;
  }
  timer = setTimeout(
    () => {
      timer = null;
      lastLiveRender = Date.now();
      rendering = true;
      void show(false).finally(() => {
        rendering = false;
        lastRenderMs = Date.now() - lastLiveRender;
        if (eventsWhileRendering) {
          eventsWhileRendering = false;
          refreshSoon();
        }
      });
    },
    Math.max(150, lastLiveRender + Math.max(1000, 10 * lastRenderMs) - Date.now()),
  );
}

let sidebarTimer: ReturnType<typeof setTimeout> | null = null;
/** The sidebar alone again (an app made or deleted that the page shown does not show), bursts coalesced. */
function sidebarSoon(): void {
  if (sidebarTimer) return;
  sidebarTimer = setTimeout(() => {
    sidebarTimer = null;
    renderSidebar(sidebar).catch(() => {});
  }, 150);
}

let stopLive: () => void = () => {};
function restartLive(): void {
  stopLive();
  let wasDown = false;
  stopLive = subscribe(
    (event) => {
      if (current.affectedBy(event)) refreshSoon();
      else if (event.type === "app" || event.type === "account") sidebarSoon();
    },
    (state) => {
      // Back after a drop: what changed meanwhile sent no event here, so the page is read again.
      if (state === "live" && wasDown) {
        refreshSoon();
        sidebarSoon();
      }
      wasDown = state === "down";
      connection.dataset.state = state;
      connection.textContent = state === "live" ? "Live" : "Disconnected, retrying…";
    },
  );
}

window.addEventListener("hashchange", () => void show(!takeKeepFocus()));
restartLive();
void show(false);
