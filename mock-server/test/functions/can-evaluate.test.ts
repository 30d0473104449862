/** can_evaluate: App Services rule expressions over a function call's expansions. */
import { ObjectId, UUID } from "bson";
import { describe, expect, it } from "vitest";
import {
  allowsEveryone,
  callsFunctions,
  type Expansions,
  ExpressionError,
  evaluate,
  resolveFunctions,
} from "../../src/functions/can-evaluate.ts";

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

  it("convert UUIDs with %stringToUuid and %uuidToString (36 characters), and nothing else", () => {
    const text = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const withUuid: Expansions = {
      ...expansions,
      args: () => ({ id: new UUID(text), text, oid: new ObjectId(userId) }),
    };
    expect(evaluate({ "%%args.id": { "%stringToUuid": "%%args.text" } }, withUuid)).toBe(true);
    expect(evaluate({ "%%args.text": { "%uuidToString": "%%args.id" } }, withUuid)).toBe(true);
    expect(evaluate({ "%%args.id": { "%stringToUuid": "0f8fad5bd9cb469fa16570867728950e" } }, withUuid)).toBe(false);
    expect(evaluate({ "%%args.text": { "%uuidToString": "%%args.oid" } }, withUuid)).toBe(false);
    expect(evaluate({ "%%args.id": { "%stringToUuid": "not a uuid" } }, withUuid)).toBe(false);
  });

  it("compares with what a %function returned, each called once, innermost first, arguments expanded", async () => {
    const calls: [string, unknown[]][] = [];
    const call = async (name: string, args: unknown[]) => {
      calls.push([name, args]);
      if (name === "isAdmin") return args[0] === userId;
      if (name === "double") return (args[0] as number) * 2;
      if (name === "teams") return ["red", "green"];
      return undefined;
    };
    const resolved = (expression: unknown) => resolveFunctions(expression, expansions, call);
    const isAdmin = { "%function": { name: "isAdmin", arguments: ["%%user.id"] } };
    expect(evaluate(await resolved({ "%%true": isAdmin }), expansions)).toBe(true);
    expect(evaluate(await resolved({ "%%false": isAdmin }), expansions)).toBe(false);
    expect(calls).toEqual([
      ["isAdmin", [userId]],
      ["isAdmin", [userId]],
    ]);

    calls.length = 0;
    // A call among another's arguments runs first; expansions anywhere in the arguments are the caller's.
    const nested = {
      "%%args.0.someNumber": {
        $lt: {
          "%function": {
            name: "double",
            arguments: [{ "%function": { name: "double", arguments: ["%%values.limit"] } }],
          },
        },
      },
      "%%user.custom_data.teams": {
        $in: { "%function": { name: "teams", arguments: [{ by: "%%user.data.email", n: 1 }] } },
      },
    };
    expect(evaluate(await resolved(nested), expansions)).toBe(true);
    // A function that returns nothing: as an expansion that names nothing.
    expect(
      evaluate(await resolved({ "%%args.1": { $exists: { "%function": { name: "nothing" } } } }), expansions),
    ).toBe(false);
    expect(calls).toEqual([
      ["double", [10]],
      ["double", [20]],
      ["teams", [{ by: "ada@example.com", n: 1 }]],
      ["nothing", []],
    ]);
    // A returned document is a value to compare, never read as an expression.
    const returnsOperators = async () => ({ $exists: true });
    const exact = await resolveFunctions(
      { "%%args.1": { "%function": { name: "shape" } } },
      expansions,
      returnsOperators,
    );
    expect(evaluate(exact, expansions)).toBe(false);
    expect(callsFunctions({ a: [{ b: isAdmin }] })).toBe(true);
    expect(callsFunctions({ a: [{ b: "%function" }] })).toBe(false);
  });

  it("refuses a %function it cannot call: no name, arguments not a list, a name the caller has not", async () => {
    const never = async () => {
      throw new Error("not called");
    };
    const refused = (expression: unknown) => resolveFunctions(expression, expansions, never);
    await expect(refused({ "%%true": { "%function": {} } })).rejects.toThrow(ExpressionError);
    await expect(refused({ "%%true": { "%function": { name: "f", arguments: "x" } } })).rejects.toThrow(/not a list/);
    await expect(refused({ "%%true": { "%function": { name: "f", arguments: ["%%root.owner"] } } })).rejects.toThrow(
      /%%root.owner is not available/,
    );
  });

  it("refuses what it cannot evaluate rather than letting the call through", () => {
    // A %function that was not called first (resolveFunctions) is never taken as true.
    expect(() => holds({ "%%true": { "%function": { name: "isAdmin", arguments: [] } } })).toThrow(/%function/);
    expect(() => holds({ "%%root.owner": "%%user.id" })).toThrow(/%%root/);
    expect(() => holds({ "%%user.id": { $regex: "^6" } })).toThrow(/\$regex/);
    expect(() => holds({ $where: "true" })).toThrow(/\$where/);
    expect(() => holds("yes")).toThrow(/true, false or a document/);
  });
});
