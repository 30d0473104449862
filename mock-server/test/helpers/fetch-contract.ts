/** The contract check for replies read with fetch (listening emulator): same rules as `expectContract`. */
import type { LightMyRequestResponse } from "fastify";
import { expectContract } from "./contract.ts";

/** Checks a complete reply (read from a clone, so the caller can still read the body). */
export async function expectFetchContract(operationId: string, response: Response): Promise<unknown> {
  return expectTextContract(operationId, response, await response.clone().text());
}

/** Checks a reply whose body the caller read itself (a stream, read in part). */
export function expectTextContract(operationId: string, response: Response, body: string): unknown {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return expectContract(operationId, {
    statusCode: response.status,
    headers,
    body,
  } as unknown as LightMyRequestResponse);
}

/**
 * A JSON request to a listening emulator at `url`, its reply checked against `operationId`'s
 * document; the body as parsed (an empty object when there is none).
 */
export async function sendChecked(
  url: string,
  operationId: string,
  method: string,
  path: string,
  options: { body?: unknown; token?: string } = {},
) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(options.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const body = (await expectFetchContract(operationId, response)) as Record<string, any> | undefined;
  return { status: response.status, body: body ?? {} };
}

/** Signs in to an app of a listening emulator: anonymously, or as a new confirmed e-mail user. */
export function signIn(url: string) {
  const base = "/api/client/v2.0";
  return {
    /** A new anonymous user's access token. */
    anonymous: async (appId: string) =>
      (await sendChecked(url, "login", "POST", `${base}/app/${appId}/auth/providers/anon-user/login`, { body: {} }))
        .body.access_token as string,
    /** A confirmed e-mail/password user (not anonymous), made and logged in: its access token. */
    async registered(appId: string, email: string): Promise<string> {
      const body = { email, password: "secret-1" };
      await sendChecked(url, "createUser", "POST", `/_mock/v1/apps/${appId}/users`, { body });
      const login = { username: email, password: "secret-1" };
      return (
        await sendChecked(url, "login", "POST", `${base}/app/${appId}/auth/providers/local-userpass/login`, {
          body: login,
        })
      ).body.access_token as string;
    },
  };
}
