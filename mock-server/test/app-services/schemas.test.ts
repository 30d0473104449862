/**
 * Collection schemas enforced on users' writes (data/schemas.ts, docs/decisions/0037): a client's
 * insert or update whose result does not satisfy the collection's schema is refused whole with the
 * service's MongoDBError; system functions are not checked; an export's `schema.json` is read.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAppFolder } from "../../src/config/app-folder.ts";
import { anonymousLogin, callAppFunction, mongoAction, newOpenApp, testApp } from "../helpers/app.ts";
import { scratchDir } from "../helpers/scratch.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

const notes = { database: "app", collection: "notes" };
const schema = {
  title: "note",
  bsonType: "object",
  required: ["_id", "title", "owner_id"],
  properties: {
    _id: { bsonType: "objectId" },
    title: { bsonType: "string", minLength: 1 },
    done: { bsonType: "bool" },
    owner_id: {
      bsonType: "string",
      validate: { "%or": [{ "%%prevRoot": { "%exists": false } }, { "%%prevRoot.owner_id": "%%root.owner_id" }] },
    },
  },
};

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newOpenApp(app, {
    schemas: { "app.notes": schema },
    functions: {
      // As system: schemas do not apply, as rules do not.
      systemInsert: {
        runAsSystem: true,
        source: `exports = (doc) => context.services.get("mongodb-atlas").db("app").collection("notes").insertOne(doc);`,
      },
      bulk: {
        source: `exports = (doc, options) => context.services.get("mongodb-atlas").db("app").collection("notes").bulkWrite([{ insertOne: { document: doc } }], options);`,
      },
      userInsert: {
        source: `exports = (doc) => context.services.get("mongodb-atlas").db("app").collection("notes").insertOne(doc);`,
      },
    },
  });
  token = (await anonymousLogin(app, appId)).access_token;
});
afterAll(() => app.close());

const act = (name: string, args: Record<string, unknown>) =>
  mongoAction(app, appId, token, name, { ...notes, ...args });
const titles = async () =>
  ((await act("find", { query: {}, sort: { title: 1 } })).body as { title: unknown }[]).map((n) => n.title);

describe("a collection's schema", () => {
  it("refuses a user's insert that does not satisfy it, in the service's words, writing nothing", async () => {
    const ok = await act("insertOne", { document: { title: "milk", owner_id: "u1" } });
    expect(ok.response.statusCode).toBe(200);
    const bad = await act("insertOne", { document: { title: 7, done: "yes" } });
    expect(bad.response.statusCode).toBe(400);
    expect(bad.body).toMatchObject({
      error_code: "MongoDBError",
      error:
        "could not validate document: \n\t(root): owner_id is required" +
        "\n\ttitle: Invalid type. Expected: type: undefined, bsonType: string, given: [integer int long double number mixed]" +
        "\n\tdone: Invalid type. Expected: type: undefined, bsonType: bool, given: [string mixed]",
    });
    // One bad document of an insertMany: none of them is written.
    const many = await act("insertMany", {
      documents: [
        { title: "bread", owner_id: "u1" },
        { title: "", owner_id: "u1" },
      ],
    });
    expect(many.response.statusCode).toBe(400);
    expect(many.body.error).toBe(
      "could not validate document: \n\ttitle: String length must be greater than or equal to 1",
    );
    expect(await titles()).toEqual(["milk"]);
  });

  it("checks the document an update leaves, and the validate expressions over the one before", async () => {
    const wrongType = await act("updateOne", { query: { title: "milk" }, update: { $set: { done: 1 } } });
    expect(wrongType.response.statusCode).toBe(400);
    expect(wrongType.body.error).toContain("done: Invalid type.");
    // The owner may not change once set (the reference's validate example).
    const owner = await act("updateOne", { query: { title: "milk" }, update: { $set: { owner_id: "u2" } } });
    expect(owner.body.error).toBe(
      "could not validate document: \n\towner_id: does not satisfy its validate expression",
    );
    const fine = await act("updateOne", { query: { title: "milk" }, update: { $set: { done: true } } });
    expect(fine.body).toMatchObject({ matchedCount: { $numberInt: "1" }, modifiedCount: { $numberInt: "1" } });
    // An upsert's insert too.
    const upsert = await act("updateOne", {
      query: { title: "eggs" },
      update: { $set: { done: false } },
      upsert: true,
    });
    expect(upsert.body.error).toBe("could not validate document: \n\t(root): owner_id is required");
    expect(await titles()).toEqual(["milk"]);
  });

  it("applies to a user's function, not to a system function", async () => {
    const user = await callAppFunction(app, appId, token, "userInsert", [{ title: 1 }]);
    expect(user.response.statusCode).toBe(400);
    expect(user.body.error).toContain("could not validate document");
    const system = await callAppFunction(app, appId, token, "systemInsert", [{ title: 1 }]);
    expect(system.response.statusCode).toBe(200);
  });

  it("is skipped by a function's bulkWrite with bypassDocumentValidation, never by a client", async () => {
    const checked = await callAppFunction(app, appId, token, "bulk", [{ title: 2 }, {}]);
    expect(checked.body.error).toContain("could not validate document");
    const bypassed = await callAppFunction(app, appId, token, "bulk", [
      { title: 2 },
      { bypassDocumentValidation: true },
    ]);
    expect(bypassed.response.statusCode).toBe(200);
    const client = await act("insertOne", { document: { title: 3 }, bypassDocumentValidation: true });
    expect(client.response.statusCode).toBe(400);
  });

  it("refuses a namespace's writes when its schema holds what the server cannot evaluate", async () => {
    const other = await newOpenApp(app, { schemas: { "app.notes": { properties: { a: { bsonType: "integer" } } } } });
    const user = (await anonymousLogin(app, other)).access_token;
    const { response, body } = await mongoAction(app, other, user, "insertOne", { ...notes, document: { a: 1 } });
    expect(response.statusCode).toBe(400);
    expect(body.error).toBe(`the schema of 'app.notes' cannot be evaluated here: the bsonType "integer"`);
  });

  it("is read from an export's schema.json, an empty one being none", () => {
    const dir = scratchDir("schemas-");
    writeFileSync(join(dir, "realm_config.json"), JSON.stringify({ app_id: "schemas-abcde" }));
    for (const [coll, content] of [
      ["notes", schema],
      ["empty", {}],
    ] as const) {
      mkdirSync(join(dir, "data_sources", "mongodb-atlas", "app", coll), { recursive: true });
      writeFileSync(join(dir, "data_sources", "mongodb-atlas", "app", coll, "schema.json"), JSON.stringify(content));
    }
    expect(loadAppFolder(dir).config.schemas).toEqual({ "app.notes": schema });
  });
});
