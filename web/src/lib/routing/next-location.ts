/**
 * Where to go after signing in: the `next` page a user was sent away from, when it is one of this
 * app's own — a path that resolves on this origin, as the browser resolves it (it drops tabs and
 * newlines, and reads "\" as "/"). Only a leading "/" was asked before, and
 * `/\evil.example/` or `/<tab>/evil.example` passed: the browser reads them as another origin, and
 * the app's history change to it threw (the page then failed for a signed-in user, however reloaded).
 */
export function nextLocation(next: string | null, fallback = "/notes"): string {
  if (!next?.startsWith("/")) return fallback;
  let url: URL;
  try {
    url = new URL(next, window.location.origin);
  } catch {
    return fallback;
  }
  return url.origin === window.location.origin ? `${url.pathname}${url.search}${url.hash}` : fallback;
}
