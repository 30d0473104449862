import { Page } from "../../components/page.tsx";
import { ProviderSignIn } from "../../features/auth/components/provider-sign-in.tsx";
import { SignInOptions } from "../../features/auth/components/sign-in-forms.tsx";

export default function SignInRoute() {
  return (
    <Page title="Sign in">
      <SignInOptions providers={<ProviderSignIn />} />
    </Page>
  );
}
