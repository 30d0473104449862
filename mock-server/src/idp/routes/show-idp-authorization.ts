/** The account picker: the sign-in page a provider shows (its request checked first). */
import { pickerPage, sendHtml } from "../page.ts";
import { defineIdpRoute, sendReply, where } from "../route.ts";

export default defineIdpRoute("showIdpAuthorization", async (request, reply) => {
  const { tenant, provider } = await where(request);
  const params = request.query;
  const problem = tenant.authorizationProblem(provider, params);
  if (problem) return sendReply(reply, problem);
  return sendHtml(reply, 200, pickerPage({ provider, params, accounts: tenant.accounts() }));
});
