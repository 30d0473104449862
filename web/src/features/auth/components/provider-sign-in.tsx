import { useState } from "react";
import { Button } from "../../../components/button.tsx";
import { ErrorMessage, StatusMessage } from "../../../components/messages.tsx";
import { config, enabledOAuthProviders } from "../../../config/env.ts";
import { useAsyncAction } from "../../../lib/hooks/use-async-action.ts";
import { useNavigateWhileMounted } from "../../../lib/hooks/use-navigate-while-mounted.ts";
import type { OAuthProviderType } from "../api/begin-oauth-login.ts";
import { signInWithProvider } from "../hooks/session-actions.ts";
import { useNextLocation } from "../hooks/use-next-location.ts";
import { oauthErrorMessage, providerLabels } from "./oauth-messages.ts";

/** The providers this build offers (VITE_AUTH_PROVIDERS), as the service names them. */
export const offeredProviders = (): OAuthProviderType[] =>
  enabledOAuthProviders(config.authProviders).map((name) => `oauth2-${name}` as const);

/** "With Google, Apple or Facebook" (only those enabled). */
export function providersPhrase(providers: OAuthProviderType[]): string {
  const labels = providers.map((p) => providerLabels[p]);
  return labels.length > 1 ? `${labels.slice(0, -1).join(", ")} or ${labels.at(-1)}` : (labels[0] ?? "");
}

/**
 * "Continue with Google" (Apple, Facebook) for the providers the build enables: a sign-in window,
 * the account signed in (made at its first sign-in), the page the user came for.
 */
export function ProviderSignIn() {
  const providers = offeredProviders();
  const [provider, setProvider] = useState<OAuthProviderType | null>(null);
  const action = useAsyncAction(signInWithProvider);
  const next = useNextLocation();
  const navigate = useNavigateWhileMounted();
  if (providers.length === 0) return null;
  const current = provider ? providerLabels[provider] : "";
  return (
    <section className="card" aria-labelledby="providers-heading">
      <h2 id="providers-heading">With {providersPhrase(providers)}</h2>
      <ErrorMessage>
        {action.error && provider ? oauthErrorMessage(action.error, provider, "sign-in") : null}
      </ErrorMessage>
      <StatusMessage>
        {action.pending ? `Continue in the ${current} window that opened. Close it to cancel.` : null}
      </StatusMessage>
      <div className="actions provider-buttons">
        {providers.map((p) => (
          <Button
            key={p}
            variant="secondary"
            busy={action.pending && provider === p}
            disabled={action.pending}
            onClick={async () => {
              setProvider(p);
              const result = await action.run(p);
              if (result.ok) navigate(next);
            }}
          >
            Continue with {providerLabels[p]}
          </Button>
        ))}
      </div>
    </section>
  );
}
