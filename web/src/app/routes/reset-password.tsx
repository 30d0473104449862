import { Page } from "../../components/page.tsx";
import { ResetPasswordForm } from "../../features/auth/components/reset-password-form.tsx";

export default function ResetPasswordRoute() {
  return (
    <Page title="Choose a new password">
      <ResetPasswordForm />
    </Page>
  );
}
