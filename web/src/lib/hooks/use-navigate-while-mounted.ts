import { useCallback, useEffect, useRef } from "react";
import { useLocation } from "wouter";

/**
 * `navigate` for the end of an async action: it does nothing once the component is gone. Signing
 * in flips the session before the action ends (the profile is read after it), the pages' guards move
 * the user on at once, and the user may have gone elsewhere since; a late `navigate` would undo that.
 */
export function useNavigateWhileMounted(): (to: string) => void {
  const [, navigate] = useLocation();
  const mounted = useRef(false);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  return useCallback(
    (to: string) => {
      if (mounted.current) navigate(to);
    },
    [navigate],
  );
}
