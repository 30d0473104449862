import type { ReactNode } from "react";
import { Redirect, useLocation, useSearch } from "wouter";
import { nextLocation } from "../lib/routing/next-location.ts";
import { useSession } from "../lib/session/use-session.ts";

/** Pages of signed-in users: others go to the sign-in page, which brings them back afterwards. */
export function RequireSession({ children }: { children: ReactNode }) {
  const session = useSession();
  const [location] = useLocation();
  const search = useSearch();
  if (session.status === "signed-in") return children;
  const comeBack = session.reason === null || session.reason === "expired";
  const next = encodeURIComponent(location + (search ? `?${search}` : ""));
  return <Redirect to={comeBack ? `/sign-in?next=${next}` : "/sign-in"} replace />;
}

/** Sign-in and sign-up pages: a registered user who is signed in has nothing to do there. */
export function GuestOnly({ children }: { children: ReactNode }) {
  const session = useSession();
  const next = new URLSearchParams(useSearch()).get("next");
  if (session.status === "signed-in" && !session.anonymous) {
    return <Redirect to={nextLocation(next)} replace />;
  }
  return children;
}

export function HomeRedirect() {
  const session = useSession();
  return <Redirect to={session.status === "signed-in" ? "/notes" : "/sign-in"} replace />;
}
