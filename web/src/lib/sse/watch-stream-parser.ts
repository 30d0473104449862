/**
 * The change-stream framing of App Services (wire reference §8), parsed the way both official SDKs
 * do: UTF-8 decoded, split on "\n" (a trailing "\r" is dropped; CR-only line ends are not
 * supported), an empty line dispatches, ":" lines are comments, `event:` sets the type, `data:`
 * appends its value and "\n" (one leading space dropped), `id:`/`retry:`/unknown fields are
 * ignored. On dispatch the last "\n" goes, an empty data buffer dispatches nothing, and the data is
 * un-escaped (`%25` → "%", `%0A` → LF, `%0D` → CR; any other "%xx" stays). Type "" or `message`
 * must parse to a document; `error` carries `{error_code, error}`; other types are ignored.
 */

export type WatchStreamItem =
  | { kind: "event"; document: Record<string, unknown> }
  | { kind: "error"; code: string; message: string };

export interface WatchStreamParserOptions {
  /** Parses an event's data (the notes feature passes Extended JSON's parser). */
  parseDocument?: (text: string) => unknown;
}

/** Undoes the service's percent-escaping of exactly "%", LF and CR, in one pass. */
export function unescapeSseData(data: string): string {
  if (!data.includes("%")) return data;
  return data.replace(/%(25|0A|0D)/g, (_, code: string) => (code === "25" ? "%" : code === "0A" ? "\n" : "\r"));
}

function errorItem(data: string): WatchStreamItem {
  try {
    const parsed = JSON.parse(data) as { error_code?: unknown; error?: unknown };
    if (typeof parsed.error_code === "string" && typeof parsed.error === "string") {
      return { kind: "error", code: parsed.error_code, message: parsed.error };
    }
  } catch {
    // fall through: the raw data is the message
  }
  return { kind: "error", code: "unknown", message: data };
}

export function createWatchStreamParser(options: WatchStreamParserOptions = {}) {
  const parseDocument = options.parseDocument ?? JSON.parse;
  const decoder = new TextDecoder();
  let buffer = "";
  let eventType = "";
  let dataBuffer = "";

  function dispatch(out: WatchStreamItem[]): void {
    if (dataBuffer.length === 0) {
      eventType = "";
      return;
    }
    const data = unescapeSseData(dataBuffer.endsWith("\n") ? dataBuffer.slice(0, -1) : dataBuffer);
    const type = eventType;
    dataBuffer = "";
    eventType = "";
    if (type === "" || type === "message") {
      let parsed: unknown;
      try {
        parsed = parseDocument(data);
      } catch {
        parsed = undefined;
      }
      if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
        out.push({ kind: "event", document: parsed as Record<string, unknown> });
      } else {
        out.push({ kind: "error", code: "bad bson parse", message: `server returned malformed event: ${data}` });
      }
    } else if (type === "error") {
      out.push(errorItem(data));
    }
  }

  function line(raw: string, out: WatchStreamItem[]): void {
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (text.length === 0) {
      dispatch(out);
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    // As in realm-web, a line without a colon names no field and is ignored.
    const field = colon === -1 ? "" : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") eventType = value;
    else if (field === "data") dataBuffer += `${value}\n`;
  }

  return {
    /** Feeds bytes (or already decoded text) and returns the items completed by them. */
    feed(chunk: Uint8Array | string): WatchStreamItem[] {
      buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
      const out: WatchStreamItem[] = [];
      let newline = buffer.indexOf("\n");
      while (newline !== -1) {
        line(buffer.slice(0, newline), out);
        buffer = buffer.slice(newline + 1);
        newline = buffer.indexOf("\n");
      }
      return out;
    },
  };
}
