/**
 * An exported app's roles and filters as the query filter of each action (data/role-rules.ts):
 * the first role whose `apply_when` holds for the caller and the document is the document's role,
 * none means no access, and what this server does not evaluate refuses instead of granting.
 */
import { UUID } from "bson";
import { describe, expect, it } from "vitest";
import type { CollectionRule } from "../../src/config/app-config.ts";
import { mapRules } from "../../src/config/app-folder.ts";
import { compileQuery } from "../../src/data/query-engine.ts";
import { fieldsOf, insertsOnly, shaper, shaperOf } from "../../src/data/query-jobs.ts";
import {
  type Condition,
  condition,
  readShape,
  roleCondition,
  UnsupportedRule,
  writeCuts,
} from "../../src/data/role-rules.ts";
import { ruleProblems } from "../../src/data/rules.ts";
import type { Expansions } from "../../src/functions/can-evaluate.ts";

const expansionsOf = (user: Record<string, unknown>): Expansions => ({
  user: () => user,
  args: () => [],
  values: { admins: ["u-admin"] },
  environment: { tag: "production", values: {} },
  request: () => ({}),
});

const employee = expansionsOf({ id: "u-1", data: { email: "ann@example.com" }, custom_data: { manages: [] } });
const manager = expansionsOf({
  id: "u-2",
  data: { email: "bob@example.com" },
  custom_data: { manages: ["ann@example.com"] },
});

/** The documents of `docs` a condition admits. */
function admitted(found: Condition, docs: Record<string, unknown>[]): unknown[] {
  if (found === false) return [];
  if (found === true) return docs.map((doc) => doc.email);
  const query = compileQuery(found);
  return docs.filter((doc) => query.test(doc)).map((doc) => doc.email);
}

// The App Services documentation's example: each employee reads and writes their own document;
// a manager also those of whom they manage, and may create and delete them.
const employees: CollectionRule = mapRules({
  roles: [
    {
      name: "Manager",
      apply_when: { email: "%%user.custom_data.manages" },
      insert: true,
      delete: true,
      read: true,
      write: true,
    },
    {
      name: "Employee",
      apply_when: { email: "%%user.data.email" },
      insert: false,
      delete: false,
      read: true,
      write: true,
    },
  ],
})!;
const staff = [{ email: "ann@example.com" }, { email: "bob@example.com" }, { email: "cid@example.com" }];

describe("roles", () => {
  it("assigns each document the first role that applies to it, and none leaves it out", () => {
    expect(admitted(roleCondition(employees, "read", employee), staff)).toEqual(["ann@example.com"]);
    expect(admitted(roleCondition(employees, "read", manager), staff)).toEqual(["ann@example.com", "bob@example.com"]);
    // Only a document whose role is Manager may be deleted or inserted.
    expect(admitted(roleCondition(employees, "delete", employee), staff)).toEqual([]);
    expect(admitted(roleCondition(employees, "delete", manager), staff)).toEqual(["ann@example.com"]);
    expect(admitted(roleCondition(employees, "insert", manager), staff)).toEqual(["ann@example.com"]);
  });

  it("does not let a later role grant what the role applying first refuses", () => {
    const rule = mapRules({
      roles: [
        { name: "reader", apply_when: { "%%user.id": "%%root.owner" }, read: true, write: false, delete: false },
        { name: "anyone", apply_when: {}, read: true, write: true, delete: true },
      ],
    })!;
    const docs = [
      { email: "own", owner: "u-1" },
      { email: "other", owner: "u-9" },
    ];
    expect(admitted(roleCondition(rule, "read", employee), docs)).toEqual(["own", "other"]);
    expect(admitted(roleCondition(rule, "write", employee), docs)).toEqual(["other"]);
    expect(admitted(roleCondition(rule, "delete", employee), docs)).toEqual(["other"]);
  });

  it("decides the caller's side of apply_when at once, and stops at a role that applies to every document", () => {
    const rule = mapRules({
      roles: [
        { name: "admin", apply_when: { "%%user.id": { "%in": "%%values.admins" } }, read: true, write: true },
        { name: "tagged", apply_when: { "%%environment.tag": "production" }, read: true, write: false },
        { name: "never reached", apply_when: {}, read: true, write: true },
      ],
    })!;
    expect(roleCondition(rule, "write", expansionsOf({ id: "u-admin" }))).toBe(true);
    expect(roleCondition(rule, "read", employee)).toBe(true);
    expect(roleCondition(rule, "write", employee)).toBe(false);
  });

  it("narrows a role by its document filters and the filters that apply", () => {
    const rule = mapRules({
      roles: [
        {
          name: "owner",
          apply_when: {},
          document_filters: { read: { team: "%%user.custom_data.team" }, write: { owner: "%%user.id" } },
          read: true,
          write: true,
        },
      ],
      filters: [
        { name: "live only", apply_when: { "%%true": true }, query: { deleted: { $ne: true } } },
        { name: "not for this user", apply_when: { "%%user.id": "someone else" }, query: { never: true } },
      ],
    })!;
    const docs = [
      { email: "a", team: "red", owner: "u-1" },
      { email: "b", team: "red", owner: "u-9" },
      { email: "c", team: "blue", owner: "u-1" },
      { email: "d", team: "red", owner: "u-1", deleted: true },
    ];
    const red = expansionsOf({ id: "u-1", custom_data: { team: "red" } });
    expect(admitted(roleCondition(rule, "read", red), docs)).toEqual(["a", "b"]);
    expect(admitted(roleCondition(rule, "write", red), docs)).toEqual(["a", "c"]);
    // A user without custom data: the read filter names nothing, so it matches nothing.
    expect(roleCondition(rule, "read", expansionsOf({ id: "u-1", custom_data: {} }))).toBe(false);
  });

  it("tells an insert, which has no document before it, by %%prevRoot (the insert-only pattern)", () => {
    const insertOnly = mapRules({
      roles: [{ name: "r", apply_when: {}, insert: true, read: true, write: { "%%prevRoot": { "%exists": false } } }],
    })!;
    expect(roleCondition(insertOnly, "insert", employee)).toBe(true);
    expect(roleCondition(insertOnly, "write", employee)).toBe(false);
    expect(roleCondition(insertOnly, "read", employee)).toBe(true);
    // The documentation's example: an existing document, or a new one whose status is "new".
    const either = mapRules({
      roles: [
        {
          name: "r",
          apply_when: {},
          insert: true,
          write: { "%or": [{ "%%prevRoot": { "%exists": "%%true" } }, { "%%root.status": "new" }] },
        },
      ],
    })!;
    expect(roleCondition(either, "write", employee)).toBe(true);
    expect(roleCondition(either, "insert", employee)).toEqual({ status: "new" });
  });

  it("inserts only with the role's insert and write permissions both", () => {
    const rule = (write: unknown) => mapRules({ roles: [{ name: "r", apply_when: {}, insert: true, write }] })!;
    expect(roleCondition(rule(false), "insert", employee)).toBe(false);
    expect(roleCondition(rule(true), "insert", employee)).toBe(true);
    expect(roleCondition(rule({ owner: "%%user.id" }), "insert", employee)).toEqual({ owner: "u-1" });
  });

  it("converts the caller's values with %stringToUuid, as with %stringToOid", () => {
    const text = "0f8fad5b-d9cb-469f-a165-70867728950e";
    const rule = mapRules({ roles: [{ apply_when: { owner: { "%stringToUuid": "%%user.data.uuid" } }, read: true }] })!;
    const withUuid = expansionsOf({ id: "u-1", data: { uuid: text }, custom_data: {} });
    expect(roleCondition(rule, "read", withUuid)).toEqual({ owner: new UUID(text) });
    expect(admitted(roleCondition(rule, "read", withUuid), [{ owner: new UUID(text) }, { owner: text }])).toHaveLength(
      1,
    );
  });

  it("reads a role's whole-document grant from its field-level permissions", () => {
    const all = mapRules({ roles: [{ name: "r", apply_when: {}, additional_fields: { read: true } }] })!;
    expect(roleCondition(all, "read", employee)).toBe(true);
    expect(roleCondition(all, "write", employee)).toBe(false);
  });

  it("refuses what it does not evaluate rather than grant or withhold silently", () => {
    const refused =
      (rule: unknown, action: "read" | "write" = "read") =>
      () =>
        roleCondition(mapRules(rule)!, action, employee);
    expect(refused({ roles: [{ name: "r", apply_when: {}, fields: { a: { read: { "%%user.id": "x" } } } }] })).toThrow(
      /the read permission of field 'a' of role 'r' \(not true or false\)/,
    );
    expect(
      refused({
        roles: [{ name: "r", apply_when: {}, fields: { a: { fields: { b: { write: { "%%true": true } } } } } }],
      }),
    ).toThrow(/the write permission of field 'a.b' of role 'r' \(not true or false\)/);
    // A %function not called first (Rules.prepare) is never taken as true.
    expect(
      refused({ roles: [{ apply_when: { "%%true": { "%function": { name: "isAdmin" } } }, read: true }] }),
    ).toThrow(UnsupportedRule);
    expect(refused({ roles: [{ apply_when: { a: "%%root.b" }, read: true }] })).toThrow(UnsupportedRule);
    expect(refused({ roles: [{ apply_when: {}, write: { "%%prevRoot.owner": "%%user.id" } }] }, "write")).toThrow(
      UnsupportedRule,
    );
    expect(refused({ roles: [{ apply_when: {}, write: { "%%prevRoot": { owner: "x" } } }] }, "write")).toThrow(
      new UnsupportedRule("%%prevRoot but for whether it exists"),
    );
    expect(refused({ roles: [{ apply_when: { a: { "%regex": "x" } }, read: true }] })).toThrow(UnsupportedRule);
  });
});

describe("read shapes", () => {
  // A directory: each person reads their own document whole, the others' names only; nobody reads
  // `internal` (a filter's projection).
  const directory = mapRules({
    roles: [
      { name: "self", apply_when: { user_id: "%%user.id" }, read: true, write: true },
      {
        name: "colleague",
        apply_when: {},
        fields: { _id: { read: true }, name: { read: true } },
        additional_fields: {},
      },
    ],
    filters: [{ name: "no internals", apply_when: {}, query: {}, projection: { internal: 0 } }],
  })!;
  const people = [
    { _id: 1, user_id: "u-1", name: "Ann", salary: 10, internal: "x" },
    { _id: 2, user_id: "u-2", name: "Bob", salary: 20, internal: "y", team: "red" },
  ];

  it("shows each document as its first applying role reads it, then as the filters project it", () => {
    expect(admitted(roleCondition(directory, "read", employee), people)).toHaveLength(2);
    const shape = readShape(directory, employee)!;
    const shaped = people.map(shaper(shape));
    expect(shaped).toEqual([
      { _id: 1, user_id: "u-1", name: "Ann", salary: 10 },
      { _id: 2, name: "Bob" },
    ]);
    // The same role hiding named fields instead (additional fields readable).
    const hiding = mapRules({
      roles: [{ name: "r", apply_when: {}, fields: { salary: { read: false } }, additional_fields: { read: true } }],
    })!;
    expect(people.map(shaper(readShape(hiding, employee)))).toEqual([
      { _id: 1, user_id: "u-1", name: "Ann", internal: "x" },
      { _id: 2, user_id: "u-2", name: "Bob", internal: "y", team: "red" },
    ]);
  });

  it("tells which fields of a document a change may show", () => {
    const shows = shaperOf(readShape(directory, employee)!);
    expect(shows.field(people[1]!, "name", "Bo")).toBe("Bo");
    expect(shows.field(people[1]!, "salary", 30)).toBeUndefined();
    expect(shows.field(people[1]!, "team.lead", "x")).toBeUndefined();
    expect(shows.field(people[0]!, "salary", 30)).toBe(30);
    expect(shows.field(people[0]!, "internal", "z")).toBeUndefined();
    expect(shows.field(people[0]!, "internal.part", "z")).toBeUndefined();
    expect([
      shows.sees(people[1]!, "name"),
      shows.sees(people[1]!, "salary"),
      shows.sees(people[0]!, "internal"),
    ]).toEqual([true, false, false]);
  });

  // The reference's pattern: some fields of an embedded document (its "Field-level Permissions for
  // Embedded Documents"), and a field whose own permission overrides its embedded fields'.
  const embedded = mapRules({
    roles: [
      {
        name: "canReadEmbeddedField",
        apply_when: {},
        fields: {
          _id: { read: true },
          address: { fields: { city: { read: true }, geo: { fields: { lat: { write: true } } } } },
          profile: { read: true, fields: { ssn: { read: false } } },
        },
        additional_fields: {},
      },
    ],
  })!;
  const person = {
    _id: 1,
    name: "Ann",
    address: { street: "1 Main", city: "Oslo", geo: { lat: 59.9, lng: 10.7 } },
    profile: { ssn: "x", bio: "y" },
    places: [{ city: "Rome" }],
  };

  it("shows the embedded fields a role reads, as a projection of their paths would", () => {
    expect(admitted(roleCondition(embedded, "read", employee), [person])).toHaveLength(1);
    const shape = readShape(embedded, employee)!;
    expect(shaper(shape)(person)).toEqual({
      _id: 1,
      address: { city: "Oslo", geo: { lat: 59.9 } },
      profile: { ssn: "x", bio: "y" },
    });
    // Arrays of embedded documents are cut element by element; other values leave nothing.
    const listed = mapRules({ roles: [{ apply_when: {}, fields: { stops: { fields: { city: { read: true } } } } }] })!;
    expect(
      shaper(readShape(listed, employee))({ stops: [{ city: "A", at: 1 }, 5, [{ city: "B", at: 2 }]], x: 1 }),
    ).toEqual({
      stops: [{ city: "A" }, [{ city: "B" }]],
    });
    expect(shaper(readShape(listed, employee))({ stops: "nowhere" })).toEqual({});
    // With the other fields readable, the field granted in part is still cut.
    const others = mapRules({
      roles: [
        {
          apply_when: {},
          fields: { address: { fields: { city: { read: true } } } },
          additional_fields: { read: true },
        },
      ],
    })!;
    expect(shaper(readShape(others, employee))(person)).toEqual({ ...person, address: { city: "Oslo" } });
    const changes = shaperOf(shape);
    expect(changes.field(person, "address.city", "Bergen")).toBe("Bergen");
    expect(changes.field(person, "address.street", "2 Main")).toBeUndefined();
    expect(changes.field(person, "address", { street: "2 Main", city: "Bergen" })).toEqual({ city: "Bergen" });
    expect(changes.field(person, "address.geo.lng", 1)).toBeUndefined();
    expect(changes.field(person, "profile.ssn", "z")).toBe("z");
    expect([
      changes.sees(person, "address"),
      changes.sees(person, "address.street"),
      changes.sees(person, "name"),
    ]).toEqual([true, false, false]);
  });

  it("lets a role write only the embedded fields it writes", () => {
    const writable = fieldsOf(writeCuts(embedded, employee, false)!)(person)!;
    expect(writable("name")).toBe(false);
    expect(writable("address")).toEqual({
      whole: false,
      fields: { geo: { whole: false, fields: { lat: { whole: true, fields: {} } } } },
    });
    const inserting = fieldsOf(writeCuts(embedded, employee, true)!)({})!;
    expect(insertsOnly(inserting, { address: { geo: { lat: 1 } } }, ["address"])).toBe(true);
    expect(insertsOnly(inserting, { address: { geo: { lat: 1, lng: 2 } } }, ["address"])).toBe(false);
    expect(insertsOnly(inserting, { address: { city: "Oslo" } }, ["address"])).toBe(false);
    expect(insertsOnly(inserting, { address: [{ geo: { lat: 1 } }] }, ["address"])).toBe(true);
    expect(insertsOnly(inserting, { address: "here" }, ["address"])).toBe(false);
  });

  it("tells which fields of a document its role writes", () => {
    const cuts = writeCuts(
      mapRules({
        roles: [
          { name: "owner", apply_when: { owner: "%%user.id" }, write: true },
          { name: "editor", apply_when: {}, fields: { title: { write: true } }, additional_fields: {} },
        ],
      })!,
      employee,
      false,
    )!;
    const writable = fieldsOf(cuts);
    expect(writable({ owner: "u-1", title: "t" })).toBeNull();
    const editor = writable({ owner: "u-2", title: "t", body: "b" })!;
    expect([editor("title"), editor("body"), editor("owner")]).toEqual([true, false, false]);
    expect(writeCuts(employees, employee, false)).toBeUndefined();
  });

  it("leaves documents whole where no role reads only some fields and no filter projects", () => {
    expect(readShape(employees, manager)).toBeUndefined();
    const wholeByFields = mapRules({ roles: [{ name: "r", apply_when: {}, additional_fields: { read: true } }] })!;
    expect(readShape(wholeByFields, employee)).toBeUndefined();
    const projectionFor = mapRules({
      roles: [{ read: true }],
      filters: [{ apply_when: { "%%user.id": "someone else" }, query: {}, projection: { secret: 0 } }],
    })!;
    expect(readShape(projectionFor, employee)).toBeUndefined();
  });
});

describe("condition", () => {
  it("makes an expression a query over the document: field names, %%root, operators, %and / %or", () => {
    expect(condition({ owner_id: "%%user.id" }, employee)).toEqual({ owner_id: "u-1" });
    expect(condition({ "%%root.owner_id": "%%user.id" }, employee)).toEqual({ owner_id: "u-1" });
    expect(condition({ "%or": [{ a: 1 }, { "%%user.id": "u-1" }] }, employee)).toBe(true);
    expect(condition({ "%and": [{ a: { "%gt": 1 } }, { b: { $in: ["%%user.id", "x"] } }] }, employee)).toEqual({
      $and: [{ a: { $gt: 1 } }, { b: { $in: ["u-1", "x"] } }],
    });
    // An expansion that names nothing is never equal to anything.
    expect(condition({ team: "%%user.custom_data.team" }, employee)).toBe(false);
    expect(condition({ team: { "%ne": "%%user.custom_data.team" } }, employee)).toBe(true);
  });
});

describe("rules checked at start", () => {
  const rules: Record<string, CollectionRule> = {
    // Evaluated here: none of these is named.
    "hr.staff": {
      roles: [
        { name: "Manager", apply_when: { user_id: "%%user.custom_data.manages" }, read: true, write: true },
        { name: "Employee", apply_when: { user_id: "%%user.id" }, read: true, write: true },
      ],
      filters: [],
    },
    "hr.log": {
      roles: [
        { name: "append", apply_when: {}, insert: true, read: true, write: { "%%prevRoot": { "%exists": false } } },
      ],
    },
    "hr.inbox": { read: true, insert: true },
    "hr.calls": { roles: [{ apply_when: { "%%true": { "%function": { name: "decide" } } }, read: true }] },
    // Not evaluated here, or not valid: named, with what.
    "hr.nested": {
      roles: [
        { name: "parts", apply_when: {}, fields: { address: { fields: { city: { read: { "%%user.id": "x" } } } } } },
      ],
    },
    "hr.typo": {
      roles: [
        { name: "own", apply_when: {}, document_filters: { read: { owner: { $eqq: "%%user.id" } } }, read: true },
      ],
    },
    default: { roles: [{ name: "peers", apply_when: { "%%root.owner": "%%root.editor" }, read: true }] },
  };

  it("names each namespace whose rules this server does not evaluate, with what, and only those", () => {
    expect(ruleProblems({ rules })).toEqual([
      "rules of 'hr.nested' (the read permission of field 'address.city' of role 'parts' (not true or false): its actions are refused)",
      "rules of 'hr.typo' (unknown operator: $eqq: its actions are refused)",
      expect.stringMatching(/^default rules \(.*%%root.*: the actions they cover are refused\)$/),
    ]);
    expect(ruleProblems({})).toEqual([]);
  });
});
