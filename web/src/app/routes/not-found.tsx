import { Link } from "wouter";
import { Page } from "../../components/page.tsx";

export default function NotFoundRoute() {
  return (
    <Page title="Page not found">
      <p>
        There is no page at this address. <Link href="/">Go to the start page</Link>
      </p>
    </Page>
  );
}
