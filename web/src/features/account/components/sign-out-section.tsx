import { useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ConfirmDialog } from "../../../components/dialog.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import { signOut } from "../hooks/session-end.ts";

/** Signs out here; the app then shows the sign-in page (every tab follows). */
export function SignOutSection() {
  const session = useSession();
  const guest = session.status === "signed-in" && session.anonymous;
  return (
    <section aria-labelledby="sign-out-heading" className="card">
      <h2 id="sign-out-heading">Sign out</h2>
      <p>
        {guest
          ? "A guest account cannot be signed in to again: once you sign out, its notes are out of reach. Add an e-mail address and password first to keep them."
          : "Sign out of Notes in this browser. Your other devices stay signed in."}
      </p>
      {guest ? <GuestSignOut /> : <SignOutButton />}
    </section>
  );
}

function SignOutButton() {
  const action = useAsyncAction(signOut);
  return (
    <Button variant="secondary" busy={action.pending} onClick={() => void action.run()}>
      Sign out
    </Button>
  );
}

/** A guest's sign-out cannot be undone (nothing signs in to the account again): it asks first. */
function GuestSignOut() {
  const [open, setOpen] = useState(false);
  const action = useAsyncAction(signOut);
  return (
    <>
      <Button
        variant="danger"
        onClick={() => {
          action.reset();
          setOpen(true);
        }}
      >
        Sign out…
      </Button>
      <ConfirmDialog
        open={open}
        title="Sign out of the guest account?"
        confirmLabel="Sign out and lose the notes"
        busy={action.pending}
        error={action.error ? errorMessage(action.error) : null}
        onCancel={() => setOpen(false)}
        onConfirm={async () => {
          if ((await action.run()).ok) setOpen(false);
        }}
      >
        <p>
          A guest account cannot be signed in to again, so its notes will be out of reach for good. To keep them, cancel
          and add an e-mail address and password above.
        </p>
      </ConfirmDialog>
    </>
  );
}
