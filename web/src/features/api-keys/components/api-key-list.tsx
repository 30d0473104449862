import { useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ConfirmDialog } from "../../../components/dialog.tsx";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { errorMessage } from "../../../lib/errors/error-message.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { deleteApiKey } from "../api/delete-api-key.ts";
import { disableApiKey } from "../api/disable-api-key.ts";
import { enableApiKey } from "../api/enable-api-key.ts";
import { getApiKey } from "../api/get-api-key.ts";
import type { ApiKey } from "../api/list-api-keys.ts";

interface ApiKeyListProps {
  keys: ApiKey[];
  onChanged: (key: ApiKey) => void;
  onDeleted: (id: string) => void;
}

type Busy = { id: string; what: "toggle" | "delete" } | null;

/** Enables or disables a key, then reads it back so the list shows what the service now holds. */
async function setEnabled(key: ApiKey, enabled: boolean): Promise<ApiKey> {
  if (enabled) await enableApiKey(key._id);
  else await disableApiKey(key._id);
  return getApiKey(key._id);
}

export function ApiKeyList({ keys, onChanged, onDeleted }: ApiKeyListProps) {
  const [busy, setBusy] = useState<Busy>(null);
  const [status, setStatus] = useState<string | null>(null);
  const [deleting, setDeleting] = useState<ApiKey | null>(null);
  const toggle = useAsyncAction(setEnabled);
  const remove = useAsyncAction(deleteApiKey);

  return (
    <>
      <ErrorMessage>{toggle.error ? errorMessage(toggle.error) : null}</ErrorMessage>
      <StatusMessage>{status}</StatusMessage>
      {keys.length === 0 ? <p>You have no API keys yet.</p> : null}
      <table className="table" hidden={keys.length === 0}>
        <caption className="visually-hidden">Your API keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Status</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => (
            <tr key={key._id}>
              <th scope="row">{key.name}</th>
              <td>{key.disabled ? "Disabled" : "Enabled"}</td>
              <td className="row-actions">
                <Button
                  variant="secondary"
                  busy={busy?.id === key._id && busy.what === "toggle"}
                  disabled={busy !== null}
                  onClick={async () => {
                    setBusy({ id: key._id, what: "toggle" });
                    setStatus(null);
                    const result = await toggle.run(key, key.disabled);
                    setBusy(null);
                    if (result.ok) {
                      onChanged(result.value);
                      setStatus(`The key ${key.name} is now ${result.value.disabled ? "disabled" : "enabled"}.`);
                    }
                  }}
                >
                  {key.disabled ? "Enable" : "Disable"}
                  <span className="visually-hidden"> {key.name}</span>
                </Button>
                <Button
                  variant="danger"
                  disabled={busy !== null}
                  onClick={() => {
                    remove.reset();
                    setDeleting(key);
                  }}
                >
                  Delete<span className="visually-hidden"> {key.name}</span>
                </Button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ConfirmDialog
        open={deleting !== null}
        title={`Delete the key ${deleting?.name ?? ""}?`}
        confirmLabel="Delete key"
        busy={remove.pending}
        error={remove.error ? errorMessage(remove.error) : null}
        onCancel={() => setDeleting(null)}
        onConfirm={async () => {
          if (!deleting) return;
          const key = deleting;
          const result = await remove.run(key._id);
          if (!result.ok) return;
          setDeleting(null);
          onDeleted(key._id);
          setStatus(`The key ${key.name} has been deleted.`);
        }}
      >
        <p>Anything that signs in with this key will stop working.</p>
      </ConfirmDialog>
    </>
  );
}
