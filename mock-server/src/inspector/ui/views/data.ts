/** An app's collections and, for the chosen one, its documents (canonical Extended JSON). */
import { client, unwrap } from "../api.ts";
import { h, json, table } from "../dom.ts";

const pageSize = 100;

export async function dataPanel(appId: string, database?: string, collection?: string): Promise<Node> {
  const { collections } = await unwrap(client.GET("/_mock/v1/apps/{appId}/data", { params: { path: { appId } } }));
  const base = `#/apps/${encodeURIComponent(appId)}/data`;
  const list = table(
    `${collections.length} collection${collections.length === 1 ? "" : "s"}`,
    ["Collection", "Documents"],
    collections.map((c) => {
      const current = c.database === database && c.collection === collection;
      return [
        h(
          "a",
          {
            href: `${base}/${encodeURIComponent(c.database)}/${encodeURIComponent(c.collection)}`,
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
  const page = await unwrap(
    client.GET("/_mock/v1/apps/{appId}/data/{database}/{collection}", {
      params: { path: { appId, database, collection }, query: { limit: pageSize } },
    }),
  );
  return h(
    "div",
    null,
    list,
    h("h3", null, `${database}.${collection}`),
    h(
      "p",
      { class: "meta" },
      page.total > page.documents.length
        ? `The first ${page.documents.length} of ${page.total} documents.`
        : `${page.total} document${page.total === 1 ? "" : "s"}.`,
    ),
    page.documents.length > 0 ? json(page.documents) : h("p", { class: "empty" }, "The collection is empty."),
  );
}
