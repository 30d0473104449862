/** The URL path of a change stream (`watch` of the MongoDB service), as realm-web and realm-core ask for it. */
export function watchPath(appId: string, namespace: { database: string; collection: string }, token?: string): string {
  const request = Buffer.from(
    JSON.stringify({ name: "watch", service: "mongodb-atlas", arguments: [namespace] }),
  ).toString("base64");
  const query = `baas_request=${encodeURIComponent(request)}${token ? `&baas_at=${token}` : ""}`;
  return `/api/client/v2.0/app/${appId}/functions/call?${query}`;
}
