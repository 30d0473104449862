/**
 * The fake identity provider on its own (`app-services-emulator idp`): a local OpenID Connect
 * provider (and Facebook's Graph API) for a production server to reach through its discovery URL
 * (`--identity-provider <URL>/_mock/idp/<tenant>`), so the production code path — discovery, keys
 * over HTTP, the code exchange, Apple's client-secret JWT, `debug_token` — is what a test or the
 * production rehearsal exercises. It serves the same routes as the emulator's built-in one, with
 * tenants made on first use, the clients of an exported app (`--app DIR`) or `--client`, real
 * time, and its control routes for accounts and tokens. It keeps nothing on disk.
 */
import { readFileSync } from "node:fs";
import Fastify, { type FastifyInstance } from "fastify";
import packageJson from "../../package.json" with { type: "json" };
import { type OAuth2ProviderName, oauth2ProviderNames } from "../config/app-config.ts";
import { loadAppFolder } from "../config/app-folder.ts";
import createIdentityProviderAccount from "../control/create-identity-provider-account.ts";
import listIdentityProviderAccounts from "../control/list-identity-provider-accounts.ts";
import mintIdentityProviderToken from "../control/mint-identity-provider-token.ts";
import { defineControlRoute } from "../control/route.ts";
import { controlErrors } from "../errors/catalogue.ts";
import { sendError } from "../http/error-handler.ts";
import { registerJsonParser } from "../http/json-body.ts";
import { routing } from "../http/request-targets.ts";
import { registerValidation } from "../http/validation.ts";
import { registerDocumentedRoutes } from "../openapi/register-routes.ts";
import { FakeIdentityProvider, idpPrefix } from "./fake-identity-provider.ts";
import { standaloneIdpHost } from "./host.ts";
import { identityProviderPlugin } from "./plugin.ts";
import type { IdpClient } from "./tenant.ts";

export type IdpClients = Partial<Record<OAuth2ProviderName, IdpClient>>;

export interface StandaloneOptions {
  clients: IdpClients;
  /** The origin its issuers begin with; else each request's own. */
  publicUrl: string | null;
}

/** The OAuth 2.0 clients of an exported app folder (what registering the app with each provider gives). */
export function clientsOfAppFolder(dir: string): IdpClients {
  const { providers = {} } = loadAppFolder(dir).config;
  const clients: IdpClients = {};
  for (const provider of oauth2ProviderNames) {
    const settings = providers[provider];
    if (settings?.clientId)
      clients[provider] = { clientId: settings.clientId, clientSecret: settings.clientSecret, teamId: settings.teamId };
  }
  return clients;
}

/** `PROVIDER=CLIENT_ID:SECRET` (`@FILE`: the secret, or Apple's PEM key, read from a file). */
export function parseClient(text: string): [OAuth2ProviderName, IdpClient] | string {
  const match = /^(oauth2-google|oauth2-apple|oauth2-facebook)=([^:]+):(.+)$/.exec(text);
  if (!match) return `'${text}' is not PROVIDER=CLIENT_ID:SECRET (PROVIDER: ${oauth2ProviderNames.join(", ")})`;
  const [, provider, clientId, secret] = match as unknown as [string, OAuth2ProviderName, string, string];
  let clientSecret = secret;
  if (secret.startsWith("@")) {
    try {
      clientSecret = readFileSync(secret.slice(1), "utf8");
    } catch (error) {
      return `cannot read ${secret.slice(1)}: ${(error as NodeJS.ErrnoException).code ?? error}`;
    }
  }
  return [provider, { clientId, clientSecret }];
}

export async function buildIdentityProviderApp(options: StandaloneOptions): Promise<FastifyInstance> {
  const startedAt = Date.now();
  const provider = new FakeIdentityProvider();
  const app = Fastify({ logger: false, ...routing });
  app.decorate("idpHost", standaloneIdpHost(provider, options.clients, options.publicUrl));
  registerJsonParser(app);
  registerValidation(app);
  app.setErrorHandler((error, request, reply) => sendError(request, reply, error));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      controlErrors.notFound(`no route ${request.method} ${request.originalUrl.split("?")[0]}`),
    ),
  );
  const health = defineControlRoute("getHealth", async () => ({
    status: "ok" as const,
    version: packageJson.version,
    startedAt: new Date(startedAt).toISOString(),
    uptimeMs: Date.now() - startedAt,
  }));
  registerDocumentedRoutes(
    app,
    [health, listIdentityProviderAccounts, createIdentityProviderAccount, mintIdentityProviderToken],
    "control",
  );
  await app.register(identityProviderPlugin, { provider });
  return app;
}

export interface RunningIdentityProvider {
  app: FastifyInstance;
  url: string;
  close(): Promise<void>;
}

export async function startIdentityProvider(
  options: StandaloneOptions & { host: string; port: number },
): Promise<RunningIdentityProvider> {
  const app = await buildIdentityProviderApp(options);
  await app.listen({ host: options.host, port: options.port });
  const address = app.server.address();
  const port = address !== null && typeof address === "object" ? address.port : options.port;
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return { app, url: `http://${host}:${port}`, close: () => app.close() };
}

export const idpUsage = `Usage:
  app-services-emulator idp [options]

A fake identity provider standing in for Google, Apple and Facebook, on its own: point a server at
it with --identity-provider <URL>${idpPrefix}/<tenant> (any tenant name; each has its own accounts).

Options:
  --port N             port (default 4100; 0 = any free port)
  --host H             address (default 127.0.0.1)
  --public-url URL     the origin its issuers and pages use (default: each request's Host)
  --app DIR            know the OAuth 2.0 clients of this exported app (auth/providers.json, secrets.json)
  --client P=ID:SECRET know this client (P: oauth2-google, oauth2-apple, oauth2-facebook; SECRET
                       @FILE reads it from a file, e.g. Apple's .p8 key); repeatable
  -h, --help           show this help`;
