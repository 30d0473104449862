import { appOf, defineControlRoute, iso } from "./route.ts";

/**
 * The newest `limit` confirmation and reset tokens issued (of an address, of a kind), oldest
 * first, with the link of their e-mail, and how many match.
 */
export default defineControlRoute("listAuthTokens", async (request) => {
  const app = await appOf(request);
  const { email, kind, limit } = request.query;
  const now = app.clock.now();
  const { tokens, total } = await app.authTokens.newest(
    { ...(email !== undefined ? { email } : {}), ...(kind !== undefined ? { kind } : {}) },
    // (The validator fills in the document's default, 1,000; the type keeps it optional.)
    limit ?? 1000,
  );
  return {
    tokens: tokens.map((t) => ({
      email: t.email,
      kind: t.kind,
      token: t.token,
      tokenId: t.tokenId,
      link: t.link ?? null,
      createdAt: iso(t.createdAt),
      expiresAt: iso(t.expiresAt),
      status: t.used ? ("used" as const) : now >= t.expiresAt ? ("expired" as const) : ("valid" as const),
    })),
    total,
  };
});
