import { describe, expect, it } from "vitest";
import { apiKeyFormErrors } from "./create-api-key-form.tsx";

describe("API key form validation", () => {
  it("uses the service's name rule", () => {
    expect(apiKeyFormErrors({ name: "ci-runner" })).toEqual({});
    expect(apiKeyFormErrors({ name: "ci runner" })).toEqual({
      name: "Use only letters, digits, underscores (_) and hyphens (-), without spaces.",
    });
  });
});
