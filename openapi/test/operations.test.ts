import { describe, expect, it } from "vitest";
import { documents } from "../src/documents.ts";

const methods = ["get", "put", "post", "delete", "patch", "options", "head", "trace"] as const;

function operationsOf(name: keyof typeof documents) {
  const found: { operationId: string; method: string; path: string }[] = [];
  for (const [path, item] of Object.entries(documents[name].paths)) {
    for (const method of methods) {
      const op = item[method] as { operationId?: string } | undefined;
      if (op?.operationId) found.push({ operationId: op.operationId, method: method.toUpperCase(), path });
    }
  }
  return found;
}

const appServicesBase = "/api/client/v2.0";
const userpass = `${appServicesBase}/app/{appId}/auth/providers/local-userpass`;

// Every call the issue names, with its method and path: nothing may silently drop out of the contract.
const expectedAppServices = [
  ["getLocation", "GET", `${appServicesBase}/app/{appId}/location`],
  ["login", "POST", `${appServicesBase}/app/{appId}/auth/providers/{provider}/login`],
  // realm-web's browser sign-in (Google, Apple, Facebook) and the providers' way back.
  ["beginOAuthLogin", "GET", `${appServicesBase}/app/{appId}/auth/providers/{provider}/login`],
  ["finishOAuthLogin", "GET", `${appServicesBase}/auth/callback`],
  ["finishOAuthLoginForm", "POST", `${appServicesBase}/auth/callback`],
  ["registerUser", "POST", `${userpass}/register`],
  ["confirmUser", "POST", `${userpass}/confirm`],
  ["resendConfirmationEmail", "POST", `${userpass}/confirm/send`],
  ["retryCustomConfirmation", "POST", `${userpass}/confirm/call`],
  ["resetPassword", "POST", `${userpass}/reset`],
  ["sendResetPasswordEmail", "POST", `${userpass}/reset/send`],
  ["callResetPasswordFunction", "POST", `${userpass}/reset/call`],
  ["callFunction", "POST", `${appServicesBase}/app/{appId}/functions/call`],
  ["callFunctionStreaming", "GET", `${appServicesBase}/app/{appId}/functions/call`],
  ["getProfile", "GET", `${appServicesBase}/auth/profile`],
  ["refreshAccessToken", "POST", `${appServicesBase}/auth/session`],
  ["logOut", "DELETE", `${appServicesBase}/auth/session`],
  ["deleteUser", "DELETE", `${appServicesBase}/auth/delete`],
  ["createApiKey", "POST", `${appServicesBase}/auth/api_keys`],
  ["listApiKeys", "GET", `${appServicesBase}/auth/api_keys`],
  ["getApiKey", "GET", `${appServicesBase}/auth/api_keys/{apiKeyId}`],
  ["deleteApiKey", "DELETE", `${appServicesBase}/auth/api_keys/{apiKeyId}`],
  ["enableApiKey", "PUT", `${appServicesBase}/auth/api_keys/{apiKeyId}/enable`],
  ["disableApiKey", "PUT", `${appServicesBase}/auth/api_keys/{apiKeyId}/disable`],
  // An exported app's Data API and custom HTTPS endpoints (its webhooks), by method.
  ["callDataApi", "POST", "/app/{appId}/endpoint/data/{version}/action/{action}"],
  ["callEndpointGet", "GET", "/app/{appId}/endpoint/{route}"],
  ["callEndpointPost", "POST", "/app/{appId}/endpoint/{route}"],
  ["callEndpointPut", "PUT", "/app/{appId}/endpoint/{route}"],
  ["callEndpointPatch", "PATCH", "/app/{appId}/endpoint/{route}"],
  ["callEndpointDelete", "DELETE", "/app/{appId}/endpoint/{route}"],
] as const;

const expectedEmailJs = [
  ["sendEmail", "POST", "/api/v1.0/email/send"],
  ["sendForm", "POST", "/api/v1.0/email/send-form"],
] as const;

describe("the App Services document", () => {
  const ops = operationsOf("app-services");
  it.each(expectedAppServices)("has %s as %s %s", (operationId, method, path) => {
    expect(ops).toContainEqual({ operationId, method, path });
  });
  it("has no operation beyond the recorded client calls", () => {
    expect(ops.map((o) => o.operationId).sort()).toEqual(expectedAppServices.map(([id]) => id).sort());
  });
  it("marks bearer tokens per operation (none / access / refresh)", () => {
    const security = (path: string, method: string) =>
      (documents["app-services"].paths[path]?.[method] as { security?: Record<string, unknown>[] } | undefined)
        ?.security ?? [];
    expect(security(`${appServicesBase}/auth/profile`, "get")).toEqual([{ accessToken: [] }]);
    expect(security(`${appServicesBase}/auth/session`, "post")).toEqual([{ refreshToken: [] }]);
    expect(security(`${appServicesBase}/auth/api_keys`, "get")).toEqual([{ refreshToken: [] }]);
    expect(security(`${userpass}/register`, "post")).toEqual([]);
  });
});

describe("the EmailJS document", () => {
  const ops = operationsOf("emailjs");
  it.each(expectedEmailJs)("has %s as %s %s", (operationId, method, path) => {
    expect(ops).toContainEqual({ operationId, method, path });
  });
  it("has exactly the two SDK calls", () => {
    expect(ops).toHaveLength(2);
  });
});

describe("all documents", () => {
  it("give every operation a unique operationId and a summary", () => {
    const ids = new Set<string>();
    for (const name of Object.keys(documents) as (keyof typeof documents)[]) {
      for (const { operationId } of operationsOf(name)) {
        expect(ids.has(operationId), `${operationId} is used twice`).toBe(false);
        ids.add(operationId);
      }
    }
    expect(ids.size).toBeGreaterThan(40);
  });
  it("give every request body and every reply with content an example", () => {
    const missing: string[] = [];
    for (const name of Object.keys(documents) as (keyof typeof documents)[]) {
      for (const item of Object.values(documents[name].paths)) {
        for (const method of methods) {
          const op = item[method] as
            | {
                operationId: string;
                requestBody?: { content: Record<string, { examples?: unknown }> };
                responses: Record<string, { content?: Record<string, { examples?: unknown }> }>;
              }
            | undefined;
          if (!op) continue;
          for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
            if (!media.examples) missing.push(`${op.operationId} request ${type}`);
          }
          for (const [status, reply] of Object.entries(op.responses)) {
            for (const [type, media] of Object.entries(reply.content ?? {})) {
              if (!media.examples) missing.push(`${op.operationId} ${status} ${type}`);
            }
          }
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it("start the control API with a health check", () => {
    expect(operationsOf("mock-control")).toContainEqual({
      operationId: "getHealth",
      method: "GET",
      path: "/_mock/v1/health",
    });
  });
});
