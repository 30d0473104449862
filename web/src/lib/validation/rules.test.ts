import { describe, expect, it } from "vitest";
import { apiKeyName, check, email, emailAddress, matches, maxLength, password, required, validate } from "./rules.ts";

describe("the service's input rules", () => {
  it("e-mail: one @, something on both sides, a dot in the domain, no spaces, at most 254", () => {
    expect(email("ada@example.com")).toBeNull();
    expect(email("  ada@example.com ")).toBeNull();
    expect(email("")).toBe("Enter your e-mail address.");
    for (const bad of ["ada", "ada@", "@example.com", "ada@example", "a da@example.com", "ada@@example.com"]) {
      expect(email(bad)).toMatch(/valid e-mail address/);
    }
    expect(email(`${"a".repeat(250)}@b.co`)).toMatch(/valid e-mail address/);
    expect(emailAddress("Enter the recipient's e-mail address.")("")).toBe("Enter the recipient's e-mail address.");
  });

  it("password: 6 to 128 characters", () => {
    expect(password("")).toBe("Enter a password.");
    expect(password("12345")).toMatch(/at least 6/);
    expect(password("123456")).toBeNull();
    expect(password("x".repeat(128))).toBeNull();
    expect(password("x".repeat(129))).toMatch(/at most 128/);
  });

  it("API key names: ASCII letters, digits, _ and - only", () => {
    expect(apiKeyName("ci-runner_2")).toBeNull();
    expect(apiKeyName("")).toBe("Enter a name for the key.");
    for (const bad of ["ci runner", "ci.runner", "clé", "a/b"]) expect(apiKeyName(bad)).toMatch(/Use only letters/);
  });

  it("combines rules, first failure wins", () => {
    expect(check("", required("Needed."), maxLength(3, "It"))).toBe("Needed.");
    expect(check("abcd", required("Needed."), maxLength(3, "It"))).toBe("It must be at most 3 characters long.");
    expect(matches("a", "Different.")("b")).toBe("Different.");
    expect(validate({ a: "", b: "ok" }, { a: [required("A.")], b: [required("B.")] })).toEqual({ a: "A." });
  });
});
