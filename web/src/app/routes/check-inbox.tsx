import { CheckInbox } from "../../features/auth/components/check-inbox.tsx";

export default function CheckInboxRoute() {
  return <CheckInbox />;
}
