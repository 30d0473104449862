import type { ReactNode } from "react";
import { Link, useLocation } from "wouter";
import { useSession } from "../lib/session/use-session.ts";

function NavLink({ href, children }: { href: string; children: ReactNode }) {
  const [location] = useLocation();
  return (
    <li>
      <Link href={href} aria-current={location === href ? "page" : undefined}>
        {children}
      </Link>
    </li>
  );
}

/** Landmarks shared by every page: skip link, header with the main navigation, main, footer. */
export function Layout({ children }: { children: ReactNode }) {
  const session = useSession();
  const signedIn = session.status === "signed-in";
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to main content
      </a>
      <header className="site-header">
        <div className="site-header-inner">
          <Link href="/" className="brand">
            Notes
          </Link>
          <nav aria-label="Main">
            <ul>
              {signedIn ? (
                <>
                  <NavLink href="/notes">Notes</NavLink>
                  <NavLink href="/api-keys">API keys</NavLink>
                  <NavLink href="/account">Account</NavLink>
                </>
              ) : (
                <>
                  <NavLink href="/sign-in">Sign in</NavLink>
                  <NavLink href="/sign-up">Create an account</NavLink>
                </>
              )}
              <NavLink href="/contact">Contact</NavLink>
            </ul>
          </nav>
          {signedIn ? (
            <p className="who">
              Signed in as{" "}
              <strong>
                {session.displayName ?? (session.anonymous ? "a guest" : (session.email ?? "an API key user"))}
              </strong>
            </p>
          ) : null}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
      <footer className="site-footer">
        <p>
          Notes · <Link href="/contact">Contact us</Link>
        </p>
      </footer>
    </>
  );
}
