import { appId, appServices } from "../../../lib/api-clients.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { createWatchStreamParser } from "../../../lib/sse/watch-stream-parser.ts";
import { notesNamespace, parseEjsonText, toCanonical } from "./notes-ejson.ts";

/** An `event: error` the stream sent after it opened. */
export class WatchStreamError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "WatchStreamError";
  }
}

export interface ChangeEvent {
  operationType?: string;
  documentKey?: { _id?: unknown };
  fullDocument?: Record<string, unknown>;
  updateDescription?: { updatedFields?: Record<string, unknown>; removedFields?: string[] };
}

/** Standard base64 (with padding) of the UTF-8 bytes, as the SDK encodes `baas_request`. */
function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

interface WatchOptions {
  signal: AbortSignal;
  onOpen: () => void;
  onChange: (event: ChangeEvent) => void;
}

/**
 * callFunctionStreaming: a change stream of the notes collection (MongoDB `watch`) as server-sent
 * events, with the access token in the Authorization header. Resolves when the service ends the
 * stream; rejects on an error reply, an `event: error`, a broken connection or an abort.
 */
export async function watchNotes({ signal, onOpen, onChange }: WatchOptions): Promise<void> {
  const call = { name: "watch", arguments: [toCanonical({ ...notesNamespace })], service: "mongodb-atlas" };
  const { data, error, response } = await appServices.GET("/api/client/v2.0/app/{appId}/functions/call", {
    params: { path: { appId }, query: { baas_request: base64(JSON.stringify(call)) } },
    headers: { Accept: "text/event-stream" },
    parseAs: "stream",
    signal,
  });
  if (!response.ok || !data) throw AppServicesRequestError.fromResponse(response, error);
  onOpen();
  const parser = createWatchStreamParser({ parseDocument: parseEjsonText });
  const reader = data.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const item of parser.feed(value)) {
        if (item.kind === "error") throw new WatchStreamError(item.code, item.message);
        onChange(item.document as ChangeEvent);
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
