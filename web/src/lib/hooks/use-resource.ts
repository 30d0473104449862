import { type DependencyList, useCallback, useEffect, useRef, useState } from "react";
import { isAbortError } from "../errors/service-errors.ts";

export type Resource<T> =
  | { state: "loading"; data: T | undefined; error: null }
  | { state: "ready"; data: T; error: null }
  | { state: "error"; data: T | undefined; error: unknown };

/**
 * Loads data when the dependencies change (aborting the previous load) and on `reload()`, once
 * `enabled` (until then it stays loading). While a reload runs, the previous data stays visible.
 */
export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: DependencyList, enabled = true) {
  const [resource, setResource] = useState<Resource<T>>({ state: "loading", data: undefined, error: null });
  const [generation, setGeneration] = useState(0);
  const latest = useRef(load);
  latest.current = load;

  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller's deps decide when to load again
  useEffect(() => {
    if (!enabled) return;
    const controller = new AbortController();
    setResource((previous) => ({ state: "loading", data: previous.data, error: null }));
    latest.current(controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setResource({ state: "ready", data, error: null });
      },
      (error: unknown) => {
        if (!controller.signal.aborted && !isAbortError(error)) {
          setResource((previous) => ({ state: "error", data: previous.data, error }));
        }
      },
    );
    return () => controller.abort();
  }, [...deps, generation, enabled]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  const update = useCallback((change: (data: T | undefined) => T) => {
    setResource((previous) => ({ ...previous, data: change(previous.data) }) as Resource<T>);
  }, []);
  return { ...resource, reload, update };
}
