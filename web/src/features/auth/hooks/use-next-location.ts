import { useSearch } from "wouter";

/** Where to go after signing in: the `next` page the user was sent away from, if it is one of ours. */
export function useNextLocation(fallback = "/notes"): string {
  const next = new URLSearchParams(useSearch()).get("next");
  return next?.startsWith("/") && !next.startsWith("//") ? next : fallback;
}
