import { useCallback, useRef, useState } from "react";
import { useMounted } from "./use-mounted.ts";

export type ActionResult<R> = { ok: true; value: R } | { ok: false; error: unknown };

/**
 * Runs one async action at a time (a second call while one runs is ignored, so double clicks do
 * not send twice) and keeps its pending flag and last error for the UI.
 */
export function useAsyncAction<A extends unknown[], R>(action: (...args: A) => Promise<R>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const running = useRef(false);
  const mounted = useMounted();
  const latest = useRef(action);
  latest.current = action;

  const run = useCallback(
    async (...args: A): Promise<ActionResult<R>> => {
      if (running.current) return { ok: false, error: new Error("busy") };
      running.current = true;
      setPending(true);
      setError(null);
      try {
        const value = await latest.current(...args);
        return { ok: true, value };
      } catch (caught) {
        if (mounted.current) setError(caught);
        return { ok: false, error: caught };
      } finally {
        running.current = false;
        if (mounted.current) setPending(false);
      }
    },
    [mounted],
  );

  const reset = useCallback(() => setError(null), []);
  return { run, pending, error, setError, reset };
}
