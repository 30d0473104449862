import { useState } from "react";
import { Link } from "wouter";
import { LoadFailed } from "../../../components/messages.tsx";
import { Loading } from "../../../components/page.tsx";
import { useResource } from "../../../lib/hooks/use-resource.ts";
import { useSession } from "../../../lib/session/use-session.ts";
import type { ApiKeyWithSecret } from "../api/create-api-key.ts";
import { listApiKeys } from "../api/list-api-keys.ts";
import { ApiKeyList } from "./api-key-list.tsx";
import { CreateApiKeyForm } from "./create-api-key-form.tsx";
import { NewKeySecret } from "./new-key-secret.tsx";

/** Create, list, enable, disable and delete the user's API keys. */
export function ApiKeysManager() {
  const session = useSession();
  const userId = session.status === "signed-in" ? session.userId : null;
  const anonymous = session.status === "signed-in" && session.anonymous;
  const keys = useResource((signal) => listApiKeys(signal), [userId]);
  const [created, setCreated] = useState<ApiKeyWithSecret | null>(null);

  return (
    <>
      {created ? <NewKeySecret apiKey={created} onDone={() => setCreated(null)} /> : null}
      <section aria-labelledby="create-key-heading" className="card">
        <h2 id="create-key-heading">Create a key</h2>
        {anonymous ? (
          <p>
            Guest accounts cannot have API keys. <Link href="/account">Add an e-mail address and password</Link> first.
          </p>
        ) : (
          <CreateApiKeyForm
            onCreated={(key) => {
              setCreated(key);
              keys.update((list) => [...(list ?? []), { _id: key._id, name: key.name, disabled: key.disabled }]);
            }}
          />
        )}
      </section>
      <section aria-labelledby="key-list-heading" className="card">
        <h2 id="key-list-heading">Your keys</h2>
        {keys.state === "error" ? <LoadFailed error={keys.error} onRetry={keys.reload} /> : null}
        {keys.data === undefined ? (
          keys.state === "loading" ? (
            <Loading>Loading your keys…</Loading>
          ) : null
        ) : (
          <ApiKeyList
            keys={keys.data}
            onChanged={(changed) =>
              keys.update((list) => (list ?? []).map((key) => (key._id === changed._id ? changed : key)))
            }
            onDeleted={(id) => keys.update((list) => (list ?? []).filter((key) => key._id !== id))}
          />
        )}
      </section>
    </>
  );
}
