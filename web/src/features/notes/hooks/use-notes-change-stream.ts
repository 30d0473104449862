import { useEffect, useRef, useState } from "react";
import { sessionStore } from "../../../lib/api-clients.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { type ChangeEvent, WatchStreamError, watchNotes } from "../api/call-function-streaming.ts";
import { afterFailure, type LiveStatus } from "./reconnect.ts";

export type { LiveStatus };

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
 * the stream it reconnects (reconnect.ts: with growing pauses, or when an unavailable service said
 * to), first dropping the access token when the stream said the session is invalid, so the
 * reconnect carries a fresh one. `onOpen` hears of every opening (`reopened` after the first): a
 * reopened stream missed what changed while it was closed, and the page reloads it.
 */
export function useNotesChangeStream(handlers: {
  onChange: (event: ChangeEvent) => void;
  onOpen: (reopened: boolean) => void;
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
        let failure: unknown = null;
        try {
          await watchNotes({
            signal,
            onOpen: () => {
              setStatus("live");
              failures = 0;
              latest.current.onOpen(opened);
              opened = true;
            },
            onChange: (event) => latest.current.onChange(event),
          });
        } catch (error) {
          if (signal.aborted) return;
          failure = error;
          if (error instanceof WatchStreamError && error.code === "InvalidSession") sessionStore.clearAccessToken();
          // The session is over (the refresh was refused): the page is about to go away.
          if (error instanceof AppServicesRequestError && sessionStore.getRefreshToken() === null) return;
        }
        if (signal.aborted) return;
        failures += 1;
        const next = afterFailure(failures, failure);
        setStatus(next.status);
        await pause(next.delayMs, signal);
      }
    })();
    return () => controller.abort();
  }, []);

  return status;
}
