import { Page } from "../../components/page.tsx";
import { ContactForm } from "../../features/contact/components/contact-form.tsx";

export default function ContactRoute() {
  return (
    <Page title="Contact us" intro={<p>Questions, ideas or problems? Write to us and we will reply by e-mail.</p>}>
      <ContactForm />
    </Page>
  );
}
