import { Page } from "../../components/page.tsx";
import { ForgotPassword } from "../../features/auth/components/forgot-password.tsx";

export default function ForgotPasswordRoute() {
  return (
    <Page title="Reset your password" intro={<p>Enter the e-mail address of your account.</p>}>
      <ForgotPassword />
    </Page>
  );
}
