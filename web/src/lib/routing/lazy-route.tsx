import { type ComponentType, lazy } from "react";

export interface LazyRoute {
  (): React.ReactNode;
  /** Loads the page's chunk ahead of time; a later first render then shows it without a fallback. */
  preload: () => Promise<void>;
}

/**
 * A page in its own chunk, like `React.lazy`, that can also be preloaded. React shows a suspended
 * route's fallback for at least 300 ms (it throttles revealing content), so a page that loads when it
 * is first shown flashes "Loading…" however fast its chunk arrives; one preloaded before (the router
 * preloads every page when the browser is idle) renders in the first commit. A failed load is tried
 * again next time.
 */
export function lazyRoute(load: () => Promise<{ default: ComponentType }>): LazyRoute {
  let loaded: ComponentType | undefined;
  let pending: Promise<ComponentType> | undefined;
  const fetchOnce = () => {
    pending ??= load().then(
      (module) => {
        loaded = module.default;
        return module.default;
      },
      (error: unknown) => {
        pending = undefined;
        throw error;
      },
    );
    return pending;
  };
  const Suspending = lazy(async () => ({ default: await fetchOnce() }));
  function Route() {
    // React matches the lazy wrapper with the page it resolved to, so a page first shown through the
    // wrapper keeps its state when later renders name the page itself.
    const Page = loaded ?? Suspending;
    return <Page />;
  }
  return Object.assign(Route, {
    preload: async () => {
      await fetchOnce();
    },
  });
}
