import { type ComponentType, type ReactNode, Suspense, useEffect } from "react";
import { Route, Switch, useLocation } from "wouter";
import { Loading } from "../components/page.tsx";
import { RouteErrorBoundary } from "../components/route-error-boundary.tsx";
import { type LazyRoute, lazyRoute } from "../lib/routing/lazy-route.tsx";
import { GuestOnly, HomeRedirect, RequireSession } from "./guards.tsx";
import { Layout } from "./layout.tsx";

type Guard = ComponentType<{ children: ReactNode }>;

/**
 * The pages, each its own chunk: the first load carries only the shell and the page it opens on
 * (see `preloadPageFor`); the others are preloaded when the browser is idle, so moving to a page
 * does not show "Loading the page…".
 */
const pages: { path: string; page: LazyRoute; guard?: Guard }[] = [
  { path: "/sign-in", page: lazyRoute(() => import("./routes/sign-in.tsx")), guard: GuestOnly },
  { path: "/sign-up", page: lazyRoute(() => import("./routes/sign-up.tsx")), guard: GuestOnly },
  { path: "/check-inbox", page: lazyRoute(() => import("./routes/check-inbox.tsx")) },
  { path: "/confirm", page: lazyRoute(() => import("./routes/confirm.tsx")) },
  { path: "/forgot-password", page: lazyRoute(() => import("./routes/forgot-password.tsx")) },
  { path: "/reset-password", page: lazyRoute(() => import("./routes/reset-password.tsx")) },
  { path: "/notes", page: lazyRoute(() => import("./routes/notes.tsx")), guard: RequireSession },
  { path: "/account", page: lazyRoute(() => import("./routes/account.tsx")), guard: RequireSession },
  { path: "/api-keys", page: lazyRoute(() => import("./routes/api-keys.tsx")), guard: RequireSession },
  { path: "/contact", page: lazyRoute(() => import("./routes/contact.tsx")) },
  { path: "/auth/callback", page: lazyRoute(() => import("./routes/auth-callback.tsx")) },
];
const NotFound = lazyRoute(() => import("./routes/not-found.tsx"));

const pageAt = (path: string) => pages.find((p) => p.path === path)?.page ?? NotFound;

/**
 * Loads the chunk of the page at `path` (for the home page, both pages it redirects to). The entry
 * waits for it, briefly, before the first render: React shows a suspended page's fallback for at
 * least 300 ms, however fast its chunk arrives.
 */
export async function preloadPageFor(path: string): Promise<void> {
  const wanted = path === "/" ? ["/notes", "/sign-in"] : [path];
  await Promise.all(wanted.map((p) => pageAt(p).preload()));
}

/** Loads every page's chunk once the browser is idle; one that fails loads when it is shown. */
function usePreloadedPages() {
  useEffect(() => {
    const preload = () => {
      for (const page of [...pages.map((p) => p.page), NotFound]) page.preload().catch(() => undefined);
    };
    if (typeof requestIdleCallback === "function") {
      const id = requestIdleCallback(preload, { timeout: 2000 });
      return () => cancelIdleCallback(id);
    }
    const timer = setTimeout(preload, 200);
    return () => clearTimeout(timer);
  }, []);
}

/** Each route gets its own error boundary (reset by navigating) and loading state. */
function Frame({ children }: { children: ReactNode }) {
  const [location] = useLocation();
  return (
    <RouteErrorBoundary key={location}>
      <Suspense fallback={<Loading>Loading the page…</Loading>}>{children}</Suspense>
    </RouteErrorBoundary>
  );
}

export function AppRouter() {
  usePreloadedPages();
  return (
    <Layout>
      <Switch>
        <Route path="/">
          <HomeRedirect />
        </Route>
        {pages.map(({ path, page: Page, guard: Guard }) => (
          <Route key={path} path={path}>
            <Frame>
              {Guard ? (
                <Guard>
                  <Page />
                </Guard>
              ) : (
                <Page />
              )}
            </Frame>
          </Route>
        ))}
        <Route>
          <Frame>
            <NotFound />
          </Frame>
        </Route>
      </Switch>
    </Layout>
  );
}
