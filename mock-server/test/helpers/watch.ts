/** What a stream watches: a namespace, and optionally `ids` and a `filter` (the `watch` argument). */
export interface WatchArgument {
  database: string;
  collection: string;
  ids?: unknown[];
  filter?: Record<string, unknown>;
}

/** The URL path of a change stream (`watch` of the MongoDB service), as realm-web and realm-core ask for it. */
export function watchPath(appId: string, namespace: WatchArgument, token?: string): string {
  const request = Buffer.from(
    JSON.stringify({ name: "watch", service: "mongodb-atlas", arguments: [namespace] }),
  ).toString("base64");
  const query = `baas_request=${encodeURIComponent(request)}${token ? `&baas_at=${token}` : ""}`;
  return `/api/client/v2.0/app/${appId}/functions/call?${query}`;
}

export interface WatchReader {
  response: Response;
  /** The next SSE block (comments skipped), or null once the server ended the stream; throws when it was refused. */
  next(): Promise<string | null>;
  close(): void;
}

/** Opens a change stream on a listening emulator (the token in the Authorization header, as realm-web sends it). */
export async function openWatch(
  url: string,
  appId: string,
  token: string,
  namespace: WatchArgument,
  headers: Record<string, string> = {},
): Promise<WatchReader> {
  const controller = new AbortController();
  const response = await fetch(`${url}${watchPath(appId, namespace)}`, {
    headers: { accept: "text/event-stream", authorization: `Bearer ${token}`, ...headers },
    signal: controller.signal,
  });
  // A refusal's body stays unread, for the caller to check.
  const reader = response.ok ? response.body!.getReader() : null;
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    response,
    async next() {
      if (!reader) throw new Error(`the stream was refused: ${response.status}`);
      for (;;) {
        const end = buffer.indexOf("\n\n");
        if (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(":")) continue;
          return block;
        }
        const { value, done } = await reader.read();
        if (done) return null;
        buffer += decoder.decode(value, { stream: true });
      }
    },
    close: () => controller.abort(),
  };
}

/** The `{error_code, error}` of an `event: error` block (throws on anything else). */
export function streamError(block: string | null): { error_code: string; error: string } {
  const [event, data] = (block ?? "").split("\n");
  if (event !== "event: error" || !data?.startsWith("data: ")) throw new Error(`not an error event: ${block}`);
  return JSON.parse(data.slice("data: ".length).replace(/%0A/g, "\n").replace(/%0D/g, "\r").replace(/%25/g, "%"));
}
