import { Page } from "../../components/page.tsx";
import { CustomData } from "../../features/account/components/custom-data.tsx";
import { DeleteAccount } from "../../features/account/components/delete-account.tsx";
import { ProfileDetails } from "../../features/account/components/profile-details.tsx";
import { SignOutSection } from "../../features/account/components/sign-out-section.tsx";
import { UpgradeAccount } from "../../features/auth/components/upgrade-account.tsx";

export default function AccountRoute() {
  return (
    <Page title="Your account">
      <UpgradeAccount />
      <ProfileDetails />
      <CustomData />
      <SignOutSection />
      <DeleteAccount />
    </Page>
  );
}
