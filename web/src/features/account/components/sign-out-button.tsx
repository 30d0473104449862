import { Button } from "../../../components/button.tsx";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { signOut } from "../hooks/session-end.ts";

/** Signs out here; the app then shows the sign-in page (every tab follows). */
export function SignOutButton() {
  const action = useAsyncAction(signOut);
  return (
    <Button variant="secondary" busy={action.pending} onClick={() => void action.run()}>
      Sign out
    </Button>
  );
}
