import { useEffect, useRef, useState } from "react";
import { sessionStore } from "../../../lib/api-clients.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { type ChangeEvent, WatchStreamError, watchNotes } from "../api/call-function-streaming.ts";

export type LiveStatus = "connecting" | "live" | "reconnecting";

const maxDelayMs = 30_000;

/** Waits before the next attempt; coming back online cuts the wait short. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      window.removeEventListener("online", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener("online", done);
    signal.addEventListener("abort", done);
  });
}

/**
 * Keeps a change stream of the notes open while the page is shown. After an error or the end of
 * the stream it reconnects with growing pauses (1 s, 2 s, 4 s … 30 s), first dropping the access
 * token when the stream said the session is invalid, so the reconnect carries a fresh one; after a
 * reconnect `onResync` reloads what may have been missed.
 */
export function useNotesChangeStream(handlers: {
  onChange: (event: ChangeEvent) => void;
  onResync: () => void;
}): LiveStatus {
  const [status, setStatus] = useState<LiveStatus>("connecting");
  const latest = useRef(handlers);
  latest.current = handlers;

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    void (async () => {
      let failures = 0;
      let opened = false;
      while (!signal.aborted) {
        try {
          await watchNotes({
            signal,
            onOpen: () => {
              setStatus("live");
              failures = 0;
              if (opened) latest.current.onResync();
              opened = true;
            },
            onChange: (event) => latest.current.onChange(event),
          });
        } catch (error) {
          if (signal.aborted) return;
          if (error instanceof WatchStreamError && error.code === "InvalidSession") sessionStore.clearAccessToken();
          // The session is over (the refresh was refused): the page is about to go away.
          if (error instanceof AppServicesRequestError && sessionStore.getRefreshToken() === null) return;
        }
        if (signal.aborted) return;
        setStatus("reconnecting");
        failures += 1;
        await pause(Math.min(1000 * 2 ** (failures - 1), maxDelayMs), signal);
      }
    })();
    return () => controller.abort();
  }, []);

  return status;
}
