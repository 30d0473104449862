import { useEffect, useState } from "react";
import { Link } from "wouter";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { Loading, Page } from "../../../components/page.tsx";
import { broadcast } from "../../../lib/broadcast.ts";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { AppServicesRequestError } from "../../../lib/errors/service-errors.ts";
import { useNavigateWhileMounted } from "../../../lib/hooks/use-navigate-while-mounted.ts";
import { pendingCredentials } from "../../../lib/pending-credentials.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { confirmUser } from "../api/confirm-user.ts";
import { resendConfirmationEmail } from "../api/resend-confirmation-email.ts";
import { useLinkToken } from "../hooks/use-link-token.ts";
import { EmailField } from "./credentials-fields.tsx";
import { useSendToAddress } from "./send-to-address.ts";
import { PasswordSignInForm } from "./sign-in-forms.tsx";

type State = { step: "confirming" } | { step: "confirmed" } | { step: "failed"; error: unknown };

// A link is used once: a second render of the page (or React's development double effects) must
// not send it twice, or the second answer would say "already used".
const confirmations = new Map<string, Promise<void>>();

function confirmOnce(token: string, tokenId: string): Promise<void> {
  let confirmation = confirmations.get(tokenId);
  if (!confirmation) {
    confirmation = confirmUser({ token, tokenId }).catch((error: unknown) => {
      // Only a reply of the service settles a link; after a connection problem it can be tried again.
      if (!(error instanceof AppServicesRequestError)) confirmations.delete(tokenId);
      throw error;
    });
    confirmations.set(tokenId, confirmation);
  }
  return confirmation;
}

function NewLinkForm({ defaultEmail }: { defaultEmail: string }) {
  const [email, setEmail] = useState(defaultEmail);
  const { errors, sentTo, form, action, submit } = useSendToAddress(resendConfirmationEmail, email);
  return (
    <section aria-labelledby="new-link" className="card">
      <h2 id="new-link">Get a new confirmation link</h2>
      <form ref={form} noValidate onSubmit={submit} aria-busy={action.pending}>
        <ErrorMessage>{action.error ? errorMessage(action.error, "confirm") : null}</ErrorMessage>
        <StatusMessage>{sentTo ? `We sent a new confirmation link to ${sentTo}.` : null}</StatusMessage>
        <EmailField value={email} onChange={setEmail} error={errors.email} />
        <Button type="submit" busy={action.pending}>
          Send a new confirmation e-mail
        </Button>
      </form>
    </section>
  );
}

/**
 * What to do once the address is confirmed depends on who is signed in here. The tab where the
 * user signed up (it holds the password) signs in by itself when told; this tab follows through
 * the shared session. Otherwise the user signs in here.
 */
function AfterConfirmation() {
  const session = useSession();
  const navigate = useNavigateWhileMounted();
  const signUpEmail = pendingCredentials.email("sign-up") ?? "";

  if (session.status === "signed-in" && session.anonymous && pendingCredentials.email("upgrade")) {
    return (
      <p>
        Return to your account page to finish adding this address to your guest account.{" "}
        <Link href="/account">Finish on the account page</Link>
      </p>
    );
  }
  if (session.status === "signed-in" && !session.anonymous) {
    return (
      <p>
        You are signed in{session.email ? ` as ${session.email}` : ""}. <Link href="/notes">Go to your notes</Link>
      </p>
    );
  }
  return (
    <section aria-labelledby="sign-in-to-continue" className="card">
      <h2 id="sign-in-to-continue">Sign in to continue</h2>
      <PasswordSignInForm
        defaultEmail={signUpEmail}
        onSignedIn={() => {
          pendingCredentials.forget("sign-up");
          navigate("/notes");
        }}
      />
    </section>
  );
}

/** The page the confirmation e-mail links to: `/confirm?token=…&tokenId=…`. */
export function ConfirmEmail() {
  const { token, tokenId } = useLinkToken();
  const [state, setState] = useState<State>({ step: "confirming" });
  const [attempt, setAttempt] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` asks for another try
  useEffect(() => {
    if (!token || !tokenId) return;
    let current = true;
    setState({ step: "confirming" });
    confirmOnce(token, tokenId).then(
      () => {
        if (!current) return;
        setState({ step: "confirmed" });
        // The tab that holds the password (sign-up or upgrade) can now finish by itself.
        broadcast({ type: "address-confirmed", email: pendingCredentials.email("sign-up") });
      },
      (error: unknown) => {
        if (current) setState({ step: "failed", error });
      },
    );
    return () => {
      current = false;
    };
  }, [token, tokenId, attempt]);

  const knownEmail = pendingCredentials.email("sign-up") ?? pendingCredentials.email("upgrade") ?? "";

  if (!token || !tokenId) {
    return (
      <Page title="Confirm your e-mail address">
        <ErrorMessage focus={false}>
          This confirmation link is incomplete. Open the link from the e-mail again, or ask for a new one below.
        </ErrorMessage>
        <NewLinkForm defaultEmail={knownEmail} />
      </Page>
    );
  }
  if (state.step === "confirming") {
    return (
      <Page title="Confirm your e-mail address">
        <Loading>Confirming your e-mail address…</Loading>
      </Page>
    );
  }
  if (state.step === "failed") {
    const alreadyConfirmed =
      state.error instanceof AppServicesRequestError && state.error.code === "UserAlreadyConfirmed";
    return (
      <Page
        title={
          alreadyConfirmed
            ? "Your e-mail address is confirmed"
            : state.error instanceof AppServicesRequestError
              ? "This link did not work"
              : "Your e-mail address could not be confirmed yet"
        }
      >
        {alreadyConfirmed ? (
          <>
            <p>Your e-mail address was already confirmed.</p>
            <AfterConfirmation />
          </>
        ) : state.error instanceof AppServicesRequestError ? (
          <>
            <ErrorMessage focus={false}>{errorMessage(state.error, "confirm")}</ErrorMessage>
            <NewLinkForm defaultEmail={knownEmail} />
          </>
        ) : (
          <>
            <ErrorMessage focus={false}>{errorMessage(state.error, "confirm")}</ErrorMessage>
            <Button onClick={() => setAttempt((n) => n + 1)}>Try again</Button>
          </>
        )}
      </Page>
    );
  }
  return (
    <Page title="Your e-mail address is confirmed">
      <StatusMessage>Thank you! Your e-mail address is confirmed.</StatusMessage>
      <AfterConfirmation />
    </Page>
  );
}
