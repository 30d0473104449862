import { Button } from "../../../components/button.tsx";
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
      <SignOutButton />
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
