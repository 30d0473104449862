import { useEffect, useRef, useState } from "react";
import { Link } from "wouter";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { parseRedirectFragment, resultKey } from "../hooks/oauth-result.ts";

/**
 * The redirect page of a browser sign-in (`/auth/callback`, one of the providers' redirect_uris):
 * hands the result in the fragment to the window that opened this one, then closes.
 */
export function OAuthRedirect() {
  const [problem, setProblem] = useState<string | null>(null);
  // Once per page (React runs effects twice in development; the fragment is gone the second time).
  const handled = useRef(false);
  useEffect(() => {
    if (handled.current) return;
    handled.current = true;
    const result = parseRedirectFragment(window.location.hash);
    if (!result.state) {
      setProblem("This page finishes a sign-in, but there is no sign-in to finish here.");
      return;
    }
    try {
      localStorage.setItem(resultKey(result.state), JSON.stringify(result));
    } catch {
      setProblem(
        "This browser does not let the app store data, so the sign-in cannot finish. Allow site data and try again.",
      );
      return;
    }
    // The tokens leave the address bar and the history.
    window.history.replaceState(null, "", window.location.pathname);
    window.close();
  }, []);
  return problem ? (
    <>
      <ErrorMessage>{problem}</ErrorMessage>
      <p>
        <Link href="/sign-in">Go to the sign-in page</Link>
      </p>
    </>
  ) : (
    <StatusMessage>Finishing signing in… You can close this window.</StatusMessage>
  );
}
