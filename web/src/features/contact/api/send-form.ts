import { config } from "../../../config/env.ts";
import { loadEmailJs, toEmailSendError } from "../../../lib/emailjs.ts";

/**
 * sendForm (EmailJS): sends the contact form with the official SDK's `sendForm`; the form's field
 * names (`user_name`, `user_email`, `message`) are the template's variables.
 */
export async function sendContactForm(form: HTMLFormElement): Promise<void> {
  const emailjs = await loadEmailJs();
  try {
    await emailjs.sendForm(config.emailJsServiceId, config.emailJsContactTemplateId, form);
  } catch (reason) {
    throw toEmailSendError(reason);
  }
}
