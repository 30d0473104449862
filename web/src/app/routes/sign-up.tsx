import { Page } from "../../components/page.tsx";
import { ProviderSignIn } from "../../features/auth/components/provider-sign-in.tsx";
import { SignUpForm } from "../../features/auth/components/sign-up-form.tsx";

export default function SignUpRoute() {
  return (
    <Page
      title="Create an account"
      intro={<p>Sign up with your e-mail address. We will send you a link to confirm it.</p>}
    >
      <SignUpForm />
      <ProviderSignIn />
    </Page>
  );
}
