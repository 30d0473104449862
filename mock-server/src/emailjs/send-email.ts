import { deliver } from "./deliver.ts";
import { defineEmailJsRoute } from "./route.ts";

/** `emailjs.send(serviceId, templateId, templateParams)`: the variables arrive as `template_params`. */
export default defineEmailJsRoute("sendEmail", async (request, reply) => {
  const body = request.body;
  return deliver(request, reply, "sendEmail", {
    userId: body.user_id,
    serviceId: body.service_id,
    templateId: body.template_id,
    accessToken: body.accessToken,
    params: body.template_params ?? {},
    attachments: [],
    journalBody: body,
  });
});
