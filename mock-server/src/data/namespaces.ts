/**
 * MongoDB's rules for database and collection names, with its messages (all InvalidNamespace,
 * code 73, which the service passes on as a MongoDBError). The texts are MongoDB's on Linux (where
 * Atlas runs) when a collection is created; docs/decisions/0002 has the evidence. Checked for every
 * action, as MongoDB checks the namespace of every command.
 */

/** Characters a database name cannot hold on Linux (besides `.` and `$`, which have their own messages). */
const badDatabaseCharacters = /[/\\ "]/;

/** Why MongoDB refuses `database.collection`, or undefined when it accepts it. */
export function namespaceError(database: string, collection: string): string | undefined {
  const namespace = `${database}.${collection}`;
  if (namespace.includes("\u0000")) return "namespaces cannot have embedded null characters";
  const databaseBytes = Buffer.byteLength(database);
  if (databaseBytes > 63) return `db name must be at most 63 characters, found: ${databaseBytes}`;
  if (database.includes(".")) return `'.' is an invalid character in a db name: ${database}`;
  if (database.includes("$")) return `Invalid namespace: ${namespace}`;
  if (badDatabaseCharacters.test(database)) return `Invalid namespace specified '${namespace}'`;
  if (collection.startsWith(".")) return `Collection names cannot start with '.': ${collection}`;
  if (collection.includes("$")) return `Invalid collection name: ${collection}`;
  if (Buffer.byteLength(namespace) > 255)
    return `Fully qualified namespace is too long. Namespace: ${namespace} Max: 255`;
  return undefined;
}
