import { lazy, type ReactNode, Suspense } from "react";
import { Route, Switch, useLocation } from "wouter";
import { Loading } from "../components/page.tsx";
import { RouteErrorBoundary } from "../components/route-error-boundary.tsx";
import { GuestOnly, HomeRedirect, RequireSession } from "./guards.tsx";
import { Layout } from "./layout.tsx";

// Every page is its own chunk: the first load carries only the shell.
const SignIn = lazy(() => import("./routes/sign-in.tsx"));
const SignUp = lazy(() => import("./routes/sign-up.tsx"));
const CheckInbox = lazy(() => import("./routes/check-inbox.tsx"));
const Confirm = lazy(() => import("./routes/confirm.tsx"));
const ForgotPassword = lazy(() => import("./routes/forgot-password.tsx"));
const ResetPassword = lazy(() => import("./routes/reset-password.tsx"));
const Notes = lazy(() => import("./routes/notes.tsx"));
const Account = lazy(() => import("./routes/account.tsx"));
const ApiKeys = lazy(() => import("./routes/api-keys.tsx"));
const Contact = lazy(() => import("./routes/contact.tsx"));
const NotFound = lazy(() => import("./routes/not-found.tsx"));

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
  return (
    <Layout>
      <Switch>
        <Route path="/">
          <HomeRedirect />
        </Route>
        <Route path="/sign-in">
          <Frame>
            <GuestOnly>
              <SignIn />
            </GuestOnly>
          </Frame>
        </Route>
        <Route path="/sign-up">
          <Frame>
            <GuestOnly>
              <SignUp />
            </GuestOnly>
          </Frame>
        </Route>
        <Route path="/check-inbox">
          <Frame>
            <CheckInbox />
          </Frame>
        </Route>
        <Route path="/confirm">
          <Frame>
            <Confirm />
          </Frame>
        </Route>
        <Route path="/forgot-password">
          <Frame>
            <ForgotPassword />
          </Frame>
        </Route>
        <Route path="/reset-password">
          <Frame>
            <ResetPassword />
          </Frame>
        </Route>
        <Route path="/notes">
          <Frame>
            <RequireSession>
              <Notes />
            </RequireSession>
          </Frame>
        </Route>
        <Route path="/account">
          <Frame>
            <RequireSession>
              <Account />
            </RequireSession>
          </Frame>
        </Route>
        <Route path="/api-keys">
          <Frame>
            <RequireSession>
              <ApiKeys />
            </RequireSession>
          </Frame>
        </Route>
        <Route path="/contact">
          <Frame>
            <Contact />
          </Frame>
        </Route>
        <Route>
          <Frame>
            <NotFound />
          </Frame>
        </Route>
      </Switch>
    </Layout>
  );
}
