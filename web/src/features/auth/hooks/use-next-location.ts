import { useSearch } from "wouter";
import { nextLocation } from "../../../lib/routing/next-location.ts";

/** Where to go after signing in: the `next` page the user was sent away from, if it is one of ours. */
export function useNextLocation(fallback = "/notes"): string {
  return nextLocation(new URLSearchParams(useSearch()).get("next"), fallback);
}
