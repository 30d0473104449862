import { describe, expect, it } from "vitest";
import { generate } from "../scripts/generate.ts";

describe("generated files", () => {
  it("are current with the OpenAPI documents (run `npm run generate` and commit when this fails)", async () => {
    expect(await generate({ check: true })).toEqual([]);
  }, 60_000);
});
