/**
 * Live events from `GET /_mock/v1/events` (server-sent events), read through the generated client
 * so a control token applies to them too. Reconnects after a drop.
 */
import { accountOf, appOf, type ControlEvent } from "../../state/events.ts";
import { client } from "./api.ts";

export { accountOf, appOf, type ControlEvent };

export function subscribe(
  onEvent: (event: ControlEvent) => void,
  onState: (state: "live" | "down") => void,
): () => void {
  const stop = new AbortController();
  const run = async () => {
    while (!stop.signal.aborted) {
      try {
        const { data, response } = await client.GET("/_mock/v1/events", { parseAs: "stream", signal: stop.signal });
        if (!response.ok || !data) throw new Error(`events: ${response.status}`);
        onState("live");
        const reader = data.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            for (const line of block.split("\n")) {
              if (line.startsWith("data: ")) onEvent(JSON.parse(line.slice(6)) as ControlEvent);
            }
            end = buffer.indexOf("\n\n");
          }
        }
      } catch {
        // dropped or refused: retry below
      }
      if (stop.signal.aborted) return;
      onState("down");
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  };
  void run();
  return () => stop.abort();
}
