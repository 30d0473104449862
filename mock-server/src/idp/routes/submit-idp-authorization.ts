/**
 * The picker's answer: sign in as an account (a known one, or a new one with its e-mail and
 * name) or cancel; back to the client's redirect URI, by a redirect or a form post.
 */
import { authorizationParams } from "../authorization-params.ts";
import { formPostPage, pickerPage, sendHtml } from "../page.ts";
import { defineIdpRoute, formFields, sendReply, where } from "../route.ts";
import type { IdpAccount } from "../tenant.ts";

const emailShape = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

export default defineIdpRoute("submitIdpAuthorization", async (request, reply) => {
  const { tenant, provider } = await where(request);
  const form = formFields(request.body);
  const params = authorizationParams(form);
  const problem = tenant.authorizationProblem(provider, params);
  if (problem) return sendReply(reply, problem);
  let choice: { account: IdpAccount } | "cancel";
  if (form.choice === "cancel") choice = "cancel";
  else {
    const email = (form.email ?? "").trim();
    const name = (form.name ?? "").trim();
    const known = form.choice === "account" ? tenant.account(email) : undefined;
    if (!known && !emailShape.test(email)) {
      const message = email === "" ? "Enter an e-mail address." : `"${email}" is not an e-mail address.`;
      return sendHtml(
        reply,
        200,
        pickerPage({ provider, params, accounts: tenant.accounts(), error: { message, email, name } }),
      );
    }
    choice = { account: known ?? tenant.upsertAccount({ email, name: name || undefined }).account };
  }
  const outcome = tenant.authorize(provider, params, choice);
  if (outcome.kind === "error") return sendReply(reply, outcome.reply);
  if (outcome.kind === "form-post") return sendHtml(reply, 200, formPostPage(provider, outcome.action, outcome.fields));
  return reply.redirect(outcome.location, 302);
});
