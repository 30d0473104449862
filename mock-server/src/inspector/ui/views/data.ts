/**
 * An app's collections and, for the chosen one, its documents: each with its fields as BSON types
 * (a date, an ObjectId, an Int32, Int64, Double or Decimal128…), its Extended JSON on demand, and
 * edit and delete; a filter (a MongoDB query), a new document, and dropping the collection.
 */
import { ApiError, client, unwrap } from "../api.ts";
import { h, table } from "../dom.ts";
import { fieldRows, idText, preview } from "../ejson.ts";
import { action, confirmDialog, navigate, withQuery } from "../view.ts";

const pageSize = 50;

type Doc = Record<string, unknown>;

/** Extended JSON typed by a person: a document, or an error that says where it is wrong. */
function parseDocument(text: string, what: string): Doc {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new Error(`${what} must be an object`);
  return value as Doc;
}

function fieldsTable(doc: Doc): HTMLElement {
  const rows = fieldRows(doc);
  return table(
    "Fields",
    ["Field", "Type", "Value"],
    rows.map((row) => [
      h("code", { class: "field-path", style: `padding-left: ${row.depth * 1.25}rem` }, row.path),
      h("span", { class: "bson-type" }, row.type),
      row.text,
    ]),
    "No fields.",
  );
}

interface Place {
  appId: string;
  database: string;
  collection: string;
}

function documentCard(place: Place, doc: Doc, index: number, refresh: () => void): HTMLElement {
  // (Its filters name the id by `$eq`: an id stored before inserts refused `{$ne: null}` and the
  // like would otherwise be read as a condition, and another document changed.)
  const id = doc._id;
  const key = `doc-${JSON.stringify(id)}`;
  const path = { params: { path: place } };
  const editorId = `edit-${index}`;
  const onSave = action(async () => {
    const text = (document.getElementById(editorId) as HTMLTextAreaElement).value;
    await unwrap(
      client.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}/replace-one", {
        ...path,
        body: { filter: { _id: { $eq: id } }, replacement: parseDocument(text, "The document") },
      }),
    );
    return `Saved the document ${idText(id)}.`;
  }, refresh);
  const onDelete = async (event: Event) => {
    if (!(await confirmDialog(`Delete the document ${idText(id)}?`, "Delete document"))) return;
    await action(async () => {
      await unwrap(
        client.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}/delete-one", {
          ...path,
          body: { filter: { _id: { $eq: id } } },
        }),
      );
      return `Deleted the document ${idText(id)}.`;
    }, refresh)(event);
  };
  const ejson = JSON.stringify(doc, null, 2);
  return h(
    "li",
    null,
    h(
      "details",
      { class: "document", "data-key": key },
      h("summary", null, h("code", null, idText(id)), h("span", { class: "preview" }, preview(doc))),
      fieldsTable(doc),
      h(
        "details",
        { "data-key": `${key}-raw` },
        h("summary", null, "Extended JSON"),
        h("pre", { class: "json", tabindex: 0 }, ejson),
      ),
      h(
        "details",
        { "data-key": `${key}-edit` },
        h("summary", null, "Edit"),
        h(
          "form",
          { class: "stacked", "aria-label": `Edit the document ${idText(id)}`, onsubmit: onSave },
          h(
            "label",
            { for: editorId },
            "The document as Extended JSON (canonical keeps every type; the _id cannot change)",
          ),
          h("textarea", { id: editorId, rows: 12, spellcheck: "false", "data-key": `${key}-text` }, ejson),
          h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Save document")),
        ),
      ),
      h(
        "div",
        { class: "actions" },
        h(
          "button",
          { type: "button", class: "danger", onclick: onDelete, "aria-label": `Delete the document ${idText(id)}` },
          "Delete…",
        ),
      ),
    ),
  );
}

function tools(place: Place, base: string, filter: string, refresh: () => void): Node[] {
  const onFilter = (event: Event) => {
    event.preventDefault();
    const text = (document.getElementById("document-filter") as HTMLInputElement).value.trim();
    navigate(withQuery(base, { filter: text === "{}" ? "" : text }), refresh);
  };
  const onAdd = action(async () => {
    const input = document.getElementById("new-document") as HTMLTextAreaElement;
    const doc = parseDocument(input.value, "The new document");
    const { insertedIds } = await unwrap(
      client.POST("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
        params: { path: place },
        body: { documents: [doc] },
      }),
    );
    input.value = "";
    return `Added the document ${idText(insertedIds[0])}.`;
  }, refresh);
  const onDrop = async (event: Event) => {
    const name = `${place.database}.${place.collection}`;
    if (!(await confirmDialog(`Drop the collection ${name} with all of its documents?`, "Drop collection"))) return;
    await action(async () => {
      const { response } = await client.DELETE("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
        params: { path: place },
      });
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      return `Dropped ${name}.`;
    }, refresh)(event);
  };
  const collectionKey = `${place.database}.${place.collection}`;
  return [
    h(
      "form",
      { class: "inline", role: "search", "aria-label": "Filter documents", onsubmit: onFilter },
      h(
        "label",
        { class: "grow" },
        "Filter (a MongoDB query as Extended JSON)",
        h("input", {
          id: "document-filter",
          type: "search",
          value: filter,
          placeholder: '{"done": true}',
          spellcheck: "false",
          "data-key": `filter-${collectionKey}`,
        }),
      ),
      h("button", { type: "submit" }, "Filter"),
      filter ? h("a", { href: base }, "Show all") : null,
    ),
    h(
      "details",
      { "data-key": `add-${collectionKey}` },
      h("summary", null, "Add a document"),
      h(
        "form",
        { class: "stacked", "aria-label": "Add a document", onsubmit: onAdd },
        h("label", { for: "new-document" }, "The document as Extended JSON (an _id is made when it has none)"),
        h("textarea", {
          id: "new-document",
          rows: 6,
          spellcheck: "false",
          required: true,
          placeholder: '{"title": "A note", "done": false}',
          "data-key": `new-${collectionKey}`,
        }),
        h("div", { class: "actions" }, h("button", { type: "submit", class: "primary" }, "Add document")),
      ),
    ),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", class: "danger", onclick: onDrop }, "Drop collection…"),
    ),
  ];
}

export async function dataPanel(
  appId: string,
  database: string | undefined,
  collection: string | undefined,
  query: URLSearchParams,
  refresh: () => void,
): Promise<Node> {
  const { collections } = await unwrap(client.GET("/_mock/v1/apps/{appId}/data", { params: { path: { appId } } }));
  const root = `#/apps/${encodeURIComponent(appId)}/data`;
  const list = table(
    `${collections.length} collection${collections.length === 1 ? "" : "s"}`,
    ["Collection", "Documents"],
    collections.map((c) => {
      const current = c.database === database && c.collection === collection;
      return [
        h(
          "a",
          {
            href: `${root}/${encodeURIComponent(c.database)}/${encodeURIComponent(c.collection)}`,
            "aria-current": current ? "true" : null,
          },
          `${c.database}.${c.collection}`,
        ),
        String(c.count),
      ];
    }),
    "No data yet.",
  );
  if (!database || !collection) return list;
  const place = { appId, database, collection };
  const base = `${root}/${encodeURIComponent(database)}/${encodeURIComponent(collection)}`;
  const filter = query.get("filter") ?? "";
  const skip = Math.max(0, Math.floor(Number(query.get("skip")) || 0));
  let page: { total: number; documents: Doc[] };
  try {
    page = await unwrap(
      client.GET("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
        params: { path: place, query: { limit: pageSize, skip, ...(filter ? { filter } : {}) } },
      }),
    );
  } catch (error) {
    // A filter MongoDB refuses: say why, next to the filter.
    if (!(error instanceof ApiError) || error.status !== 400) throw error;
    return h(
      "div",
      null,
      list,
      h("h3", null, `${database}.${collection}`),
      tools(place, base, filter, refresh),
      h("p", { class: "error", role: "alert" }, `The filter is refused: ${error.message}`),
    );
  }
  const first = page.documents.length > 0 ? skip + 1 : 0;
  const last = skip + page.documents.length;
  const pageLink = (at: number, text: string) =>
    h("a", { href: withQuery(base, { filter, skip: at ? String(at) : "" }) }, text);
  return h(
    "div",
    null,
    list,
    h("h3", null, `${database}.${collection}`),
    tools(place, base, filter, refresh),
    h(
      "p",
      { class: "meta", role: "status" },
      page.total === 0
        ? filter
          ? "No document matches the filter."
          : "The collection is empty."
        : `Documents ${first}–${last} of ${page.total}${filter ? " matching the filter" : ""}.`,
    ),
    page.documents.length > 0
      ? h(
          "ul",
          { class: "documents", "aria-label": "Documents" },
          page.documents.map((doc, i) => documentCard(place, doc, skip + i, refresh)),
        )
      : null,
    skip > 0 || last < page.total
      ? h(
          "nav",
          { class: "actions", "aria-label": "Pages" },
          skip > 0 ? pageLink(Math.max(0, skip - pageSize), "Previous page") : null,
          last < page.total ? pageLink(last, "Next page") : null,
        )
      : null,
  );
}
