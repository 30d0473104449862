import { LoadFailed } from "../../../components/messages.tsx";
import { Loading } from "../../../components/page.tsx";
import { getProfile, type Identity, profileEmail } from "../../../lib/api/get-profile.ts";
import { useResource } from "../../../lib/hooks/use-resource.ts";
import { useSession } from "../../../lib/session/use-session.ts";

const providerNames: Record<string, string> = {
  "anon-user": "Guest",
  "local-userpass": "E-mail address and password",
  "api-key": "API key",
  "custom-token": "Single sign-on token",
  "custom-function": "Custom sign-in",
  "oauth2-google": "Google",
  "oauth2-apple": "Apple",
  "oauth2-facebook": "Facebook",
};

const providerName = (identity: Identity) => providerNames[identity.provider_type] ?? identity.provider_type;

/** The profile, as the service has it. */
export function ProfileDetails() {
  const session = useSession();
  const userId = session.status === "signed-in" ? session.userId : null;
  const anonymous = session.status === "signed-in" && session.anonymous;
  const profile = useResource((signal) => getProfile(signal), [userId, anonymous]);

  return (
    <section aria-labelledby="profile-heading" className="card">
      <h2 id="profile-heading">Profile</h2>
      {profile.state === "error" ? <LoadFailed error={profile.error} onRetry={profile.reload} /> : null}
      {profile.data === undefined ? (
        profile.state === "loading" ? (
          <Loading>Loading your profile…</Loading>
        ) : null
      ) : (
        <dl className="details">
          <dt>E-mail address</dt>
          <dd>{profileEmail(profile.data) ?? "None (guest account)"}</dd>
          <dt>User ID</dt>
          <dd>
            <code>{profile.data.user_id}</code>
          </dd>
          <dt>Account type</dt>
          <dd>{profile.data.identities.every((i) => i.provider_type === "anon-user") ? "Guest" : "Registered"}</dd>
          <dt>Ways to sign in</dt>
          <dd>
            <ul className="plain-list">
              {profile.data.identities.map((identity) => (
                <li key={`${identity.provider_type}:${identity.id}`}>
                  {providerName(identity)} <span className="muted">({identity.id})</span>
                </li>
              ))}
            </ul>
          </dd>
        </dl>
      )}
    </section>
  );
}
