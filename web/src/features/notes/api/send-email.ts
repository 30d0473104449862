import { config } from "../../../config/env.ts";
import { loadEmailJs, toEmailSendError } from "../../../lib/emailjs.ts";

/** The variables of the note template (VITE_EMAILJS_NOTE_TEMPLATE_ID). */
export interface NoteEmailParams {
  to_email: string;
  note_title: string;
  note_body: string;
  from_name: string;
  reply_to: string;
}

/** sendEmail (EmailJS): sends a note through the note template with the official SDK's `send`. */
export async function sendNoteEmail(params: NoteEmailParams): Promise<void> {
  const emailjs = await loadEmailJs();
  try {
    await emailjs.send(config.emailJsServiceId, config.emailJsNoteTemplateId, { ...params });
  } catch (reason) {
    throw toEmailSendError(reason);
  }
}
