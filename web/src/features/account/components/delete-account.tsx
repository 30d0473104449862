import { useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ConfirmDialog } from "../../../components/dialog.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { deleteAccount } from "../hooks/session-end.ts";

/** Deleting the account, behind a confirmation dialog. */
export function DeleteAccount() {
  const [open, setOpen] = useState(false);
  const action = useAsyncAction(deleteAccount);
  return (
    <section aria-labelledby="delete-heading" className="card card-danger">
      <h2 id="delete-heading">Delete the account</h2>
      <p>
        This deletes your account, its API keys and its ways to sign in, and you lose access to your notes. It cannot be
        undone.
      </p>
      <Button
        variant="danger"
        onClick={() => {
          action.reset();
          setOpen(true);
        }}
      >
        Delete account…
      </Button>
      <ConfirmDialog
        open={open}
        title="Delete your account?"
        confirmLabel="Delete permanently"
        busy={action.pending}
        error={action.error ? errorMessage(action.error) : null}
        onCancel={() => setOpen(false)}
        onConfirm={async () => {
          const result = await action.run();
          if (result.ok) setOpen(false);
        }}
      >
        <p>Your account and everything that signs in to it will be deleted. You will be signed out.</p>
      </ConfirmDialog>
    </section>
  );
}
