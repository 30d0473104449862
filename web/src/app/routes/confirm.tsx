import { ConfirmEmail } from "../../features/auth/components/confirm-email.tsx";

export default function ConfirmRoute() {
  return <ConfirmEmail />;
}
