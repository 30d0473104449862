import { Page } from "../../components/page.tsx";
import { CustomData } from "../../features/account/components/custom-data.tsx";
import { DeleteAccount } from "../../features/account/components/delete-account.tsx";
import { ProfileDetails } from "../../features/account/components/profile-details.tsx";
import { SignOutButton } from "../../features/account/components/sign-out-button.tsx";
import { UpgradeAccount } from "../../features/auth/components/upgrade-account.tsx";

export default function AccountRoute() {
  return (
    <Page title="Your account">
      <UpgradeAccount />
      <ProfileDetails />
      <CustomData />
      <section aria-labelledby="sign-out-heading" className="card">
        <h2 id="sign-out-heading">Sign out</h2>
        <p>Sign out of Notes in this browser. Your other devices stay signed in.</p>
        <SignOutButton />
      </section>
      <DeleteAccount />
    </Page>
  );
}
