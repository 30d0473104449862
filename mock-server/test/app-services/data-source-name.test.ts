/**
 * The linked cluster's service name (`data_sources/<name>/config.json`): an app whose cluster is
 * not named `mongodb-atlas` is reached by its own name — by clients' `mongoClient(name)` (the
 * functions/call `service`), by functions' `context.services.get(name)` and by the Data API (which
 * takes the cluster's name too) — and its rules and schemas are read from that folder.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAppFolder } from "../../src/config/app-folder.ts";
import { bearer, call, callAppFunction, emailUser, newApp, testApp } from "../helpers/app.ts";
import { scratchDir } from "../helpers/scratch.ts";

let app: FastifyInstance;
let appId: string;
let token: string;

beforeAll(async () => {
  app = await testApp({ allowFunctionSource: true });
  appId = await newApp(app, {
    dataSource: { name: "shop-cluster", clusterName: "Cluster7" },
    dataApi: { versions: ["v1"], returnType: "JSON" },
    rules: { default: { read: true, write: true, insert: true, delete: true } },
    functions: {
      lookUp: { source: `exports = (service) => typeof context.services.get(service);` },
      count: {
        source: `exports = (service) => context.services.get(service).db("shop").collection("items").count({});`,
      },
    },
  });
  token = (await emailUser(app, appId, "ada@example.com", "correct horse")).access_token;
});
afterAll(() => app.close());

const insert = (service: string) =>
  call(app, "callFunction", {
    method: "POST",
    url: `/api/client/v2.0/app/${appId}/functions/call`,
    headers: bearer(token),
    payload: {
      name: "insertOne",
      service,
      arguments: [{ database: "shop", collection: "items", document: { name: "pen" } }],
    },
  });

const dataApi = (dataSource: string) =>
  call(app, "callDataApi", {
    method: "POST",
    url: `/app/${appId}/endpoint/data/v1/action/find`,
    headers: { "content-type": "application/json", ...bearer(token) },
    payload: JSON.stringify({ dataSource, database: "shop", collection: "items" }),
  });

describe("a linked cluster with its own service name", () => {
  it("is reached by that name from clients, functions and the Data API; mongodb-atlas is not there", async () => {
    expect((await insert("shop-cluster")).response.statusCode).toBe(200);
    const other = await insert("mongodb-atlas");
    expect(other.response.statusCode).toBe(404);
    expect(other.body).toMatchObject({ error_code: "ServiceNotFound" });

    const counted = await callAppFunction(app, appId, token, "count", ["shop-cluster"]);
    expect(counted.body).toEqual({ $numberInt: "1" });
    // (A name no service has gives undefined, as the reference says context.services.get does.)
    for (const name of ["mongodb-atlas", "nope", "constructor", "__proto__"]) {
      const looked = await callAppFunction(app, appId, token, "lookUp", [name]);
      expect(looked.body).toBe("undefined");
    }

    for (const name of ["shop-cluster", "Cluster7"]) {
      const found = await dataApi(name);
      expect(found.response.statusCode).toBe(200);
      expect(found.body.documents).toHaveLength(1);
    }
    expect((await dataApi("mongodb-atlas")).response.statusCode).toBe(404);
  });

  it("is read from an export: its name, cluster, rules and schemas; other data sources are named as not run", () => {
    const dir = scratchDir("data-source-");
    const write = (path: string, value: unknown) => {
      mkdirSync(join(dir, path, ".."), { recursive: true });
      writeFileSync(join(dir, path), JSON.stringify(value));
    };
    write("realm_config.json", { app_id: "named-abcde" });
    write("data_sources/shop-cluster/config.json", {
      name: "shop-cluster",
      type: "mongodb-atlas",
      config: { clusterName: "Cluster7" },
    });
    write("data_sources/shop-cluster/shop/items/rules.json", { roles: [{ name: "all", apply_when: {}, read: true }] });
    write("data_sources/shop-cluster/shop/items/schema.json", { properties: { name: { bsonType: "string" } } });
    write("data_sources/lake/config.json", { name: "lake", type: "datalake", config: { dataLakeName: "L" } });
    const loaded = loadAppFolder(dir);
    expect(loaded.config.dataSource).toEqual({ name: "shop-cluster", clusterName: "Cluster7" });
    expect(Object.keys(loaded.config.rules ?? {})).toEqual(["shop.items"]);
    expect(Object.keys(loaded.config.schemas ?? {})).toEqual(["shop.items"]);
    expect(loaded.notRun).toEqual(["data source 'lake' (datalake)"]);
  });
});
