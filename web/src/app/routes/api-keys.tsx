import { Page } from "../../components/page.tsx";
import { ApiKeysManager } from "../../features/api-keys/components/api-keys-manager.tsx";

export default function ApiKeysRoute() {
  return (
    <Page
      title="API keys"
      intro={<p>API keys let scripts and other apps sign in to your account. Disable or delete a key to stop them.</p>}
    >
      <ApiKeysManager />
    </Page>
  );
}
