import { useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage, LoadFailed, StatusMessage } from "../../../components/messages.tsx";
import { Loading } from "../../../components/page.tsx";
import { getProfile } from "../../../lib/api/get-profile.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useResource } from "../../../lib/hooks/use-resource.ts";
import type { OAuthProviderType } from "../api/begin-oauth-login.ts";
import { linkProvider } from "../hooks/session-actions.ts";
import { oauthErrorMessage, providerLabels } from "./oauth-messages.ts";
import { offeredProviders, providersPhrase } from "./provider-sign-in.tsx";

/**
 * The account page's "Sign in with Google, Apple or Facebook": each provider the build offers,
 * linked already or with a button that links it (a guest keeps their notes and stops being a guest).
 */
export function LinkProviders({ onLinked }: { onLinked?: () => void }) {
  const providers = offeredProviders();
  const [version, setVersion] = useState(0);
  const [provider, setProvider] = useState<OAuthProviderType | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const profile = useResource((signal) => getProfile(signal), [version]);
  const action = useAsyncAction(linkProvider);
  if (providers.length === 0) return null;
  const linked = new Set(profile.data?.identities.map((i) => i.provider_type) ?? []);

  return (
    <section className="card" aria-labelledby="link-providers-heading">
      <h2 id="link-providers-heading">Sign in with {providersPhrase(providers)}</h2>
      <ErrorMessage>{action.error && provider ? oauthErrorMessage(action.error, provider, "link") : null}</ErrorMessage>
      <StatusMessage>
        {action.pending && provider
          ? `Continue in the ${providerLabels[provider]} window that opened. Close it to cancel.`
          : done}
      </StatusMessage>
      {profile.state === "error" ? <LoadFailed error={profile.error} onRetry={profile.reload} /> : null}
      {profile.data === undefined ? (
        profile.state === "loading" ? (
          <Loading>Loading your ways to sign in…</Loading>
        ) : null
      ) : (
        <ul className="plain-list provider-links">
          {providers.map((p) => (
            <li key={p}>
              {linked.has(p) ? (
                <>{providerLabels[p]}: linked. You can sign in with it.</>
              ) : (
                <Button
                  variant="secondary"
                  busy={action.pending && provider === p}
                  disabled={action.pending}
                  onClick={async () => {
                    setProvider(p);
                    setDone(null);
                    const result = await action.run(p);
                    if (!result.ok) return;
                    setDone(`${providerLabels[p]} is linked: you can now sign in with it.`);
                    setVersion((v) => v + 1);
                    onLinked?.();
                  }}
                >
                  Link {providerLabels[p]}
                </Button>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
