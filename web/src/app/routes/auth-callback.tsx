import { Page } from "../../components/page.tsx";
import { OAuthRedirect } from "../../features/auth/components/oauth-redirect.tsx";

export default function AuthCallbackRoute() {
  return (
    <Page title="Signing in">
      <OAuthRedirect />
    </Page>
  );
}
