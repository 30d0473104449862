/** can_evaluate: App Services rule expressions over a function call's expansions. */
import { ObjectId } from "bson";
import { describe, expect, it } from "vitest";
import { allowsEveryone, type Expansions, evaluate } from "../../src/functions/can-evaluate.ts";

const userId = "65a1b2c3d4e5f60718293a4c";
const expansions: Expansions = {
  user: () => ({
    id: userId,
    type: "normal",
    data: { email: "ada@example.com" },
    identities: [{ id: "i1", provider_type: "local-userpass" }],
    custom_data: { role: "admin", teams: ["red", "blue"], age: 36 },
  }),
  args: () => [{ someNumber: 7, owner: userId }, "second"],
  values: { admins: [userId, "someone"], limit: 10 },
  environment: { tag: "production", values: { baseUrl: "https://example.com" } },
  request: () => ({ remoteIPAddress: "127.0.0.1", httpMethod: "POST" }),
};
const holds = (expression: unknown) => evaluate(expression, expansions);

describe("can_evaluate expressions", () => {
  it("let every call through when absent, empty or true", () => {
    expect(allowsEveryone(undefined)).toBe(true);
    expect(allowsEveryone({})).toBe(true);
    expect(allowsEveryone(true)).toBe(true);
    expect(allowsEveryone(false)).toBe(false);
    expect(allowsEveryone({ "%%user.id": userId })).toBe(false);
    expect(holds({})).toBe(true);
    expect(holds(false)).toBe(false);
  });

  it("compare an expansion with a value, another expansion, or the documented operators", () => {
    // realm-kotlin's test app: only the listed address may call the function.
    expect(holds({ "%%user.data.email": { "%in": ["ada@example.com"] } })).toBe(true);
    expect(holds({ "%%user.data.email": { "%in": ["grace@example.com"] } })).toBe(false);
    expect(holds({ "%%user.id": { $in: "%%values.admins" } })).toBe(true);
    expect(holds({ "%%user.id": { $nin: "%%values.admins" } })).toBe(false);
    expect(holds({ "%%args.0.owner": "%%user.id" })).toBe(true);
    expect(holds({ "%%args.0.someNumber": { "%and": [{ $gt: 0 }, { $lte: 42 }] } })).toBe(true);
    expect(holds({ "%%args.0.someNumber": { "%and": [{ $gt: 0 }, { $lte: 5 }] } })).toBe(false);
    expect(holds({ "%%args.0.someNumber": { "%or": [{ $lt: 0 }, { $eq: 7 }] } })).toBe(true);
    expect(holds({ "%%args.1": { $ne: "first" } })).toBe(true);
    expect(holds({ "%%environment.tag": "production", "%%environment.values.baseUrl": { "%exists": true } })).toBe(
      true,
    );
    expect(holds({ "%%environment.values.other": { $exists: false } })).toBe(true);
    expect(holds({ "%%request.remoteIPAddress": "127.0.0.1" })).toBe(true);
    expect(holds({ "%%user.custom_data.teams": "blue" })).toBe(true);
    expect(holds({ "%%user.custom_data.age": { $gte: 18 } })).toBe(true);
    expect(holds({ "%%user.type": "server" })).toBe(false);
  });

  it("combine fields with AND, and expressions with %and / %or", () => {
    expect(holds({ "%%user.type": "normal", "%%user.custom_data.role": "admin" })).toBe(true);
    expect(holds({ "%%user.type": "normal", "%%user.custom_data.role": "guest" })).toBe(false);
    expect(holds({ "%or": [{ "%%user.custom_data.role": "guest" }, { "%%user.id": userId }] })).toBe(true);
    expect(holds({ "%and": [{ "%%user.custom_data.role": "guest" }, { "%%user.id": userId }] })).toBe(false);
    expect(holds({ "%%true": { "%%user.custom_data.role": "admin" } })).toBe(true);
    expect(holds({ "%%false": { "%%user.custom_data.role": "admin" } })).toBe(false);
  });

  it("convert ids with %stringToOid and %oidToString, and read plain names as arguments", () => {
    const oid = new ObjectId(userId);
    const withOid: Expansions = { ...expansions, args: () => ({ ownerId: oid, url: "https://example.com" }) };
    expect(evaluate({ "%%args.ownerId": { "%stringToOid": "%%user.id" } }, withOid)).toBe(true);
    expect(evaluate({ "%%user.id": { "%oidToString": "%%args.ownerId" } }, withOid)).toBe(true);
    expect(evaluate({ url: { $exists: true } }, withOid)).toBe(true);
  });

  it("refuses what it cannot evaluate rather than letting the call through", () => {
    expect(() => holds({ "%%true": { "%function": { name: "isAdmin", arguments: [] } } })).toThrow(/%function/);
    expect(() => holds({ "%%root.owner": "%%user.id" })).toThrow(/%%root/);
    expect(() => holds({ "%%user.id": { $regex: "^6" } })).toThrow(/\$regex/);
    expect(() => holds({ $where: "true" })).toThrow(/\$where/);
    expect(() => holds("yes")).toThrow(/true, false or a document/);
  });
});
