import { useState } from "react";
import { Page } from "../../components/page.tsx";
import { CustomData } from "../../features/account/components/custom-data.tsx";
import { DeleteAccount } from "../../features/account/components/delete-account.tsx";
import { ProfileDetails } from "../../features/account/components/profile-details.tsx";
import { SignOutSection } from "../../features/account/components/sign-out-section.tsx";
import { LinkProviders } from "../../features/auth/components/link-providers.tsx";
import { UpgradeAccount } from "../../features/auth/components/upgrade-account.tsx";

export default function AccountRoute() {
  // A provider linked: the profile's ways to sign in are read again.
  const [linked, setLinked] = useState(0);
  return (
    <Page title="Your account">
      <UpgradeAccount />
      <ProfileDetails key={linked} />
      <LinkProviders onLinked={() => setLinked((n) => n + 1)} />
      <CustomData />
      <SignOutSection />
      <DeleteAccount />
    </Page>
  );
}
