import { useCallback } from "react";
import { useLocation } from "wouter";
import { useMounted } from "./use-mounted.ts";

/**
 * `navigate` for the end of an async action: it does nothing once the component is gone. Signing
 * in flips the session before the action ends (the profile is read after it), the pages' guards move
 * the user on at once, and the user may have gone elsewhere since; a late `navigate` would undo that.
 */
export function useNavigateWhileMounted(): (to: string) => void {
  const [, navigate] = useLocation();
  const mounted = useMounted();
  return useCallback(
    (to: string) => {
      if (mounted.current) navigate(to);
    },
    [navigate, mounted],
  );
}
