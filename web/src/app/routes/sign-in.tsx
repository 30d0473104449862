import { Page } from "../../components/page.tsx";
import { SignInOptions } from "../../features/auth/components/sign-in-forms.tsx";

export default function SignInRoute() {
  return (
    <Page title="Sign in">
      <SignInOptions />
    </Page>
  );
}
