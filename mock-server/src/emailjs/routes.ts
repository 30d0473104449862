/** Every EmailJS operation, one file each (named after its operationId), listed explicitly. */
import sendEmail from "./send-email.ts";
import sendForm from "./send-form.ts";

export const routes = [sendEmail, sendForm];
