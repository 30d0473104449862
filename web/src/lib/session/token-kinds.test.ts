import { documents } from "@harness/openapi/documents";
import { describe, expect, it } from "vitest";
import { tokenKindOf, tokenKinds } from "./token-kinds.ts";

type Security = Array<Record<string, string[]>> | undefined;

/** What the document says an operation takes: the schemes of its security requirements. */
function documented(operation: { security?: Security }): string {
  const schemes = new Set((operation.security ?? []).flatMap((requirement) => Object.keys(requirement)));
  if (schemes.has("refreshToken")) return "refresh";
  if (schemes.has("accessToken"))
    return schemes.size > 0 && (operation.security ?? []).some((r) => Object.keys(r).length === 0)
      ? "access-when-linking"
      : "access";
  return "none";
}

describe("token kinds", () => {
  it("match the security requirements of every operation of the App Services document", () => {
    const fromDocument: Record<string, Record<string, string>> = {};
    for (const [path, item] of Object.entries(documents["app-services"].paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!["get", "put", "post", "delete", "patch"].includes(method)) continue;
        fromDocument[path] = { ...fromDocument[path], [method]: documented(operation as { security?: Security }) };
      }
    }
    expect(tokenKinds).toEqual(fromDocument);
  });

  it("gives login the access token only with ?link=true", () => {
    const login = "/api/client/v2.0/app/{appId}/auth/providers/{provider}/login";
    expect(tokenKindOf("POST", login, "http://x/login")).toBe("none");
    expect(tokenKindOf("POST", login, "http://x/login?link=false")).toBe("none");
    expect(tokenKindOf("POST", login, "http://x/login?link=true")).toBe("access");
  });
});
