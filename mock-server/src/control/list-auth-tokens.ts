import { appOf, defineControlRoute, iso } from "./route.ts";

/** The confirmation and reset tokens issued, oldest first, with the link of their e-mail. */
export default defineControlRoute("listAuthTokens", async (request) => {
  const app = await appOf(request);
  const { email, kind } = request.query;
  const now = app.clock.now();
  const tokens = [];
  for (const t of await app.authTokens.list({
    ...(email !== undefined ? { email } : {}),
    ...(kind !== undefined ? { kind } : {}),
  })) {
    tokens.push({
      email: t.email,
      kind: t.kind,
      token: t.token,
      tokenId: t.tokenId,
      link: t.link ?? null,
      createdAt: iso(t.createdAt),
      expiresAt: iso(t.expiresAt),
      status: t.used ? ("used" as const) : now >= t.expiresAt ? ("expired" as const) : ("valid" as const),
    });
  }
  return { tokens };
});
