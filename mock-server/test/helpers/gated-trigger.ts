/**
 * An app config whose database trigger records each run of `app.notes` inserts in `audit.runs`
 * (`{n}`); a note marked `wait` first waits for a document in `audit.gate` (a function cannot sleep:
 * it asks the store until one is there), so that a test can hold one run while others queue.
 */
const record = `exports = async (event) => {
  const audit = context.services.get("mongodb-atlas").db("audit");
  if (event.fullDocument.wait) while (!(await audit.collection("gate").findOne({}))) {}
  await audit.collection("runs").insertOne({ n: event.fullDocument.n });
};`;

export const gatedTriggerConfig = {
  functions: { record: { source: record, private: true } },
  rules: { default: { read: true, write: true, insert: true, delete: true } },
  triggers: [
    {
      type: "DATABASE",
      name: "notes",
      functionName: "record",
      database: "app",
      collection: "notes",
      operationTypes: ["INSERT"],
    },
  ],
};
