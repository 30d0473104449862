import { describe, expect, it } from "vitest";
import { nextLocation } from "./next-location.ts";

describe("the page to go to after signing in", () => {
  it("is the page named when it is one of this app's", () => {
    expect(nextLocation("/notes?tag=work#n1")).toBe("/notes?tag=work#n1");
    expect(nextLocation("/api-keys")).toBe("/api-keys");
  });

  it("is the fallback for anything a browser reads as another origin, or no path of ours", () => {
    for (const next of [
      null,
      "",
      "notes",
      "//evil.example/",
      "/\\evil.example/",
      "/\\\\evil.example",
      "/\t/evil.example",
      "/\n/evil.example",
      "https://evil.example/",
      "javascript:alert(1)",
    ])
      expect(nextLocation(next), JSON.stringify(next)).toBe("/notes");
    expect(nextLocation("//evil.example", "/account")).toBe("/account");
    // (A tab inside a path of ours is dropped, as the browser drops it: still a path of ours.)
    expect(nextLocation("/\tapi-keys")).toBe("/api-keys");
  });
});
