/**
 * A user's custom data document as a token needs it, read in SQL: the first document of the
 * collection whose field is the user's id, its canonical Extended JSON only when it is at most
 * `maxBytes` long (`custom`; else null, and `custom_bytes` says how long it is: a longer text is
 * neither sent nor read). Found through the values' index, then ordered: `seq + 0` keeps the
 * planner from walking the collection in order instead. A login's statement and a refresh's read.
 */

/** The statement's parameters (or subqueries) of the app, database, collection, field, user id and bound. */
export interface CustomDataParameters {
  app: string;
  db: string;
  coll: string;
  field: string;
  userId: string;
  maxBytes: string;
}

export function customDataSelect({ app, db, coll, field, userId, maxBytes }: CustomDataParameters): string {
  return `SELECT CASE WHEN octet_length(ejson) <= ${maxBytes} THEN ejson END AS custom,
                 octet_length(ejson) AS custom_bytes
            FROM documents
           WHERE app_id = ${app} AND db = ${db} AND coll = ${coll}
             AND doc @> jsonb_build_object(${field}::text, ${userId}::text)
             AND doc -> ${field}::text = to_jsonb(${userId}::text)
           ORDER BY seq + 0 LIMIT 1`;
}
