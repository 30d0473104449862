/**
 * The PostgreSQL schema, created and upgraded by numbered migrations when an instance starts: all
 * of them in one transaction, under an advisory lock, so instances starting together apply each
 * migration once and the others wait and find it done. A database whose schema is newer than this
 * server's refuses the start (an older server must not write into a schema it does not know).
 *
 * Append new migrations; never edit an applied one.
 */
import type pg from "pg";
import { fromEJSONText } from "../../data/documents.ts";
import { idRowKey } from "./row-keys.ts";

export interface Migration {
  version: number;
  name: string;
  sql: string;
  /** Work SQL cannot do, after `sql`, in the same transaction. */
  run?: (client: pg.ClientBase) => Promise<void>;
}

export const migrations: Migration[] = [
  {
    version: 1,
    name: "apps, users, sessions, keys, tokens, documents, mail, EmailJS accounts",
    sql: `
      CREATE TABLE apps (
        app_id text PRIMARY KEY,
        domain_id text NOT NULL UNIQUE,
        created_at bigint NOT NULL,
        app_dir text,
        config jsonb NOT NULL,
        seq bigserial NOT NULL
      );

      -- A user object: its type, state, profile data and identities (doc), ordered by seq.
      CREATE TABLE users (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        id text NOT NULL,
        doc jsonb NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, id)
      );

      -- Who owns an identity: the constraint that decides concurrent first logins.
      CREATE TABLE identities (
        app_id text NOT NULL,
        provider_type text NOT NULL,
        identity_id text NOT NULL,
        user_id text NOT NULL,
        PRIMARY KEY (app_id, provider_type, identity_id),
        FOREIGN KEY (app_id, user_id) REFERENCES users (app_id, id) ON DELETE CASCADE
      );
      CREATE INDEX identities_by_user ON identities (app_id, user_id);

      -- E-mail/password registrations: one per address (normalized), whatever the instance.
      CREATE TABLE userpass_accounts (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        id text NOT NULL,
        email text NOT NULL,
        email_key text NOT NULL,
        password_hash text NOT NULL,
        confirmed boolean NOT NULL,
        user_id text,
        created_at bigint NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, id),
        UNIQUE (app_id, email_key)
      );

      CREATE TABLE sessions (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        id text NOT NULL,
        user_id text NOT NULL,
        api_key_id text,
        doc jsonb NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, id)
      );
      CREATE INDEX sessions_by_user ON sessions (app_id, user_id);

      -- API keys, hashed; a name once per user.
      CREATE TABLE api_keys (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        id text NOT NULL,
        user_id text NOT NULL,
        name text NOT NULL,
        key_hash text NOT NULL,
        disabled boolean NOT NULL,
        created_at bigint NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, id),
        UNIQUE (app_id, user_id, name),
        UNIQUE (app_id, key_hash)
      );

      -- Confirmation and reset tokens (single use: used flips once, in one conditional update).
      CREATE TABLE auth_tokens (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        token_id text NOT NULL,
        email_key text NOT NULL,
        kind text NOT NULL,
        used boolean NOT NULL,
        expires_at bigint NOT NULL,
        doc jsonb NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, token_id)
      );

      CREATE TABLE collections (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        db text NOT NULL,
        coll text NOT NULL,
        seq bigserial NOT NULL,
        PRIMARY KEY (app_id, db, coll)
      );

      -- Documents in canonical Extended JSON: doc (jsonb) is what SQL filters and the index see;
      -- ejson (the same document as text) keeps MongoDB's field order, which jsonb does not.
      CREATE TABLE documents (
        app_id text NOT NULL,
        db text NOT NULL,
        coll text NOT NULL,
        id_key text NOT NULL,
        seq bigserial NOT NULL,
        doc jsonb NOT NULL,
        ejson text NOT NULL,
        PRIMARY KEY (app_id, db, coll, id_key),
        FOREIGN KEY (app_id, db, coll) REFERENCES collections ON DELETE CASCADE
      );
      CREATE INDEX documents_in_order ON documents (app_id, db, coll, seq);
      -- Every top-level (and nested) value: rule owner fields, custom user data, equality queries.
      -- Updated with each write (no pending list), so reads stay fast between vacuums.
      CREATE INDEX documents_by_value ON documents USING gin (doc jsonb_path_ops) WITH (fastupdate = off);

      -- Who has change streams open, per app: writes announce their changes only while someone
      -- listens (announcing takes a database-wide lock at commit). Kept alive while streams are open.
      CREATE TABLE watchers (
        app_id text NOT NULL,
        instance_id text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (app_id, instance_id)
      );

      -- Change events too large for a notification's payload, read by id by every instance.
      CREATE TABLE change_log (
        id bigserial PRIMARY KEY,
        payload text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE mail (
        id bigserial PRIMARY KEY,
        app_id text,
        account text,
        source text NOT NULL,
        kind text NOT NULL,
        recipients text[] NOT NULL,
        created_at bigint NOT NULL,
        delivery_state text,
        next_attempt_at bigint,
        doc jsonb NOT NULL
      );
      CREATE INDEX mail_by_app ON mail (app_id, id);
      CREATE INDEX mail_by_account ON mail (account, id);
      CREATE INDEX mail_to_deliver ON mail (next_attempt_at, id) WHERE delivery_state = 'queued';

      CREATE TABLE emailjs_accounts (
        public_key text PRIMARY KEY,
        doc jsonb NOT NULL,
        seq bigserial NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: "an API key name of any length, still once per user",
    // A btree entry holds about 2.7 kB and a name has no limit: the uniqueness is on its SHA-256.
    // (convert_to is only STABLE because of the database encoding, which is fixed at creation.)
    sql: `
      CREATE FUNCTION api_key_name_hash(name text) RETURNS bytea
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
        AS $$ SELECT sha256(convert_to(name, 'UTF8')) $$;
      ALTER TABLE api_keys DROP CONSTRAINT api_keys_app_id_user_id_name_key;
      CREATE UNIQUE INDEX api_keys_name_once ON api_keys (app_id, user_id, api_key_name_hash(name));
    `,
  },
  {
    version: 3,
    name: "what each app holds against its limits, counted by triggers",
    // A total changes in the statement that changes what it counts (triggers, so that every path —
    // cascades, resets, drops — keeps it exact), and a statement that grows a total past its limit
    // fails with SQLSTATE 53400, its transaction with it. A transaction that sets emulator.limits
    // to 'off' (a state import) is counted but never refused. Documents count their stored Extended
    // JSON (octet_length(ejson)).
    //
    // The totals are kept in 16 slots per app, a connection adding to the slot of its backend: one
    // row per app would be locked by every write until its commit, and an app's writes would then
    // commit one at a time (insertOne fell from ~3,000/s to ~1,900/s). A write of one document or
    // one user (at most 64 KB) far from every limit it grows (by a tenth of the limit, at least
    // 1,000 and 16 MB) is checked against the sum of the slots without waiting; any other growing
    // write takes the app's usage lock (until its transaction ends) and checks the sum again, so
    // racing writers near a limit are counted one after another, on any instance. Writers far from
    // the limit could overshoot it only with more of them in flight at once than that tenth.
    sql: `
      CREATE TABLE app_usage (
        app_id text PRIMARY KEY REFERENCES apps ON DELETE CASCADE,
        max_users bigint NOT NULL,
        max_sessions_per_user integer NOT NULL,
        max_documents bigint NOT NULL,
        max_document_bytes bigint NOT NULL
      );
      CREATE TABLE app_usage_counts (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        slot smallint NOT NULL,
        users bigint NOT NULL DEFAULT 0,
        documents bigint NOT NULL DEFAULT 0,
        document_bytes bigint NOT NULL DEFAULT 0,
        PRIMARY KEY (app_id, slot)
      );
      -- Apps of an earlier schema, with the limits their config sets, else the defaults of this
      -- version (the server writes its own with every app it stores: config/app-config.ts).
      INSERT INTO app_usage (app_id, max_users, max_sessions_per_user, max_documents, max_document_bytes)
      SELECT a.app_id,
             coalesce((a.config #>> '{limits,users}')::bigint, 100000),
             coalesce((a.config #>> '{limits,sessionsPerUser}')::integer, 100),
             coalesce((a.config #>> '{limits,documents}')::bigint, 1000000),
             coalesce((a.config #>> '{limits,documentBytes}')::bigint, 1073741824)
        FROM apps a;
      INSERT INTO app_usage_counts (app_id, slot, users, documents, document_bytes)
      SELECT a.app_id, 0,
             (SELECT count(*) FROM users u WHERE u.app_id = a.app_id)
               + (SELECT count(*) FROM userpass_accounts r WHERE r.app_id = a.app_id AND r.user_id IS NULL),
             (SELECT count(*) FROM documents d WHERE d.app_id = a.app_id),
             (SELECT coalesce(sum(octet_length(d.ejson)), 0) FROM documents d WHERE d.app_id = a.app_id)
        FROM apps a;

      -- What an app holds now, as this transaction sees it (its own writes and committed ones).
      CREATE FUNCTION app_usage_total(app text, OUT users bigint, OUT documents bigint, OUT document_bytes bigint)
        LANGUAGE sql STABLE AS $$
          SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0)
            FROM app_usage_counts c WHERE c.app_id = app
        $$;

      CREATE FUNCTION count_usage(app text, d_users bigint, d_documents bigint, d_bytes bigint) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
          l app_usage%ROWTYPE;
          t_users bigint;
          t_documents bigint;
          t_bytes bigint;
        BEGIN
          IF d_users = 0 AND d_documents = 0 AND d_bytes = 0 THEN
            RETURN;
          END IF;
          -- (Not for an app being deleted: its rows go with it, and so do its counts.)
          INSERT INTO app_usage_counts AS c (app_id, slot, users, documents, document_bytes)
               SELECT app, pg_backend_pid() % 16, d_users, d_documents, d_bytes
                WHERE EXISTS (SELECT 1 FROM apps WHERE app_id = app)
          ON CONFLICT (app_id, slot) DO UPDATE SET users = c.users + excluded.users,
               documents = c.documents + excluded.documents, document_bytes = c.document_bytes + excluded.document_bytes;
          IF (d_users <= 0 AND d_documents <= 0 AND d_bytes <= 0)
             OR current_setting('emulator.limits', true) = 'off' THEN
            RETURN;
          END IF;
          SELECT * INTO l FROM app_usage WHERE app_id = app;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          -- (Inline rather than app_usage_total(): plpgsql keeps this plan; the call cost a third of an insert.)
          SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0)
            INTO t_users, t_documents, t_bytes FROM app_usage_counts c WHERE c.app_id = app;
          IF d_users > 1 OR d_documents > 1 OR d_bytes > 65536
             OR (d_users > 0 AND t_users + greatest(l.max_users / 10, 1000) > l.max_users)
             OR (d_documents > 0 AND t_documents + greatest(l.max_documents / 10, 1000) > l.max_documents)
             OR (d_bytes > 0 AND t_bytes + greatest(l.max_document_bytes / 10, 16777216) > l.max_document_bytes)
          THEN
            -- Near a limit (or a large write): the app's writers take turns, each seeing the last one's commit.
            PERFORM pg_advisory_xact_lock(1634758515, hashtext(app));
            SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0)
              INTO t_users, t_documents, t_bytes FROM app_usage_counts c WHERE c.app_id = app;
          END IF;
          IF d_users > 0 AND t_users > l.max_users THEN
            RAISE EXCEPTION 'users' USING ERRCODE = '53400', DETAIL = l.max_users::text;
          END IF;
          IF d_documents > 0 AND t_documents > l.max_documents THEN
            RAISE EXCEPTION 'documents' USING ERRCODE = '53400', DETAIL = l.max_documents::text;
          END IF;
          IF d_bytes > 0 AND t_bytes > l.max_document_bytes THEN
            RAISE EXCEPTION 'documentBytes' USING ERRCODE = '53400', DETAIL = l.max_document_bytes::text;
          END IF;
        END $$;

      CREATE FUNCTION documents_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, count(*), sum(octet_length(ejson))) FROM new_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION documents_updated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, 0, sum(bytes)) FROM (
            SELECT app_id, octet_length(ejson) AS bytes FROM new_rows
            UNION ALL SELECT app_id, -octet_length(ejson) FROM old_rows) AS changed GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION documents_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, -count(*), -sum(octet_length(ejson))) FROM old_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER documents_inserted AFTER INSERT ON documents REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_inserted();
      CREATE TRIGGER documents_updated AFTER UPDATE ON documents REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_updated();
      CREATE TRIGGER documents_deleted AFTER DELETE ON documents REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_deleted();

      -- Users: user objects, and registrations not yet tied to one (a first login claims its
      -- registration before it adds the user, so it adds no one).
      CREATE FUNCTION users_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, count(*), 0, 0) FROM new_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION users_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, -count(*), 0, 0) FROM old_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER users_inserted AFTER INSERT ON users REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION users_inserted();
      CREATE TRIGGER users_deleted AFTER DELETE ON users REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION users_deleted();

      CREATE FUNCTION registrations_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, count(*), 0, 0) FROM new_rows WHERE user_id IS NULL GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION registrations_updated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, sum(n), 0, 0) FROM (
            SELECT app_id, 1 AS n FROM new_rows WHERE user_id IS NULL
            UNION ALL SELECT app_id, -1 FROM old_rows WHERE user_id IS NULL) AS changed GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION registrations_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, -count(*), 0, 0) FROM old_rows WHERE user_id IS NULL GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER registrations_inserted AFTER INSERT ON userpass_accounts REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_inserted();
      CREATE TRIGGER registrations_updated AFTER UPDATE ON userpass_accounts
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_updated();
      CREATE TRIGGER registrations_deleted AFTER DELETE ON userpass_accounts REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_deleted();
    `,
  },
  {
    version: 4,
    name: "abuse-limit counters shared by every instance",
    // Fixed windows per key (operation, app and client address or e-mail address), timed by the
    // database's clock so that every instance agrees. Unlogged: a crash forgets the counts (a
    // window at most), and counting a sign-in attempt writes no WAL.
    sql: `
      CREATE UNLOGGED TABLE rate_limit_counters (
        key text PRIMARY KEY,
        hits integer NOT NULL,
        window_ends timestamptz NOT NULL
      );
      CREATE INDEX rate_limit_counters_window_ends ON rate_limit_counters (window_ends);
    `,
  },
  {
    version: 5,
    name: "change streams counted by every instance for their caps",
    // A row per open change stream, held by the instance that serves it: renewed while it is open,
    // deleted when it ends, and left to run out with an instance that died. Unlogged: a crash
    // empties it, and the streams end too (their instances lose the database's notifications).
    sql: `
      CREATE UNLOGGED TABLE open_streams (
        id text PRIMARY KEY,
        app_id text NOT NULL,
        user_id text NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX open_streams_by_app ON open_streams (app_id, user_id);
    `,
  },
  {
    version: 6,
    name: "what each user holds and writes, anonymous users together, streams per address",
    // docs/decisions/0018-fair-shares.md. A document counts for the user who last wrote it
    // (`owner`, null for the system's writes) and, when that user was anonymous, toward anonymous
    // users' share (`owner_anonymous`). The totals of anonymous users are kept in the app's slots
    // like the app's own; each user's in one row (`user_usage`), locked by the statements that
    // change it until their transaction ends, so a user's racing writes on any instance are
    // counted one after another and each sees the others' commits (users do not wait for each
    // other). The same row holds the user's allowance of writes (documents inserted or changed a
    // second, refilled at the rate up to a second's worth, by the database's clock): a statement
    // that writes needs one write left, unless its transaction spent from it already (an action's
    // later statements), and may take it below zero. Past a limit, SQLSTATE 53400 with the limit's
    // name as message and its value as detail, as the app's.
    sql: `
      ALTER TABLE documents ADD COLUMN owner text, ADD COLUMN owner_anonymous boolean NOT NULL DEFAULT false;
      -- The client address of each open change stream (the per-address cap).
      ALTER TABLE open_streams ADD COLUMN address text;

      ALTER TABLE app_usage
        ADD COLUMN max_anonymous_documents bigint,
        ADD COLUMN max_anonymous_document_bytes bigint,
        ADD COLUMN max_user_documents bigint,
        ADD COLUMN max_user_document_bytes bigint,
        ADD COLUMN max_user_writes_per_second double precision,
        ADD COLUMN max_anonymous_user_documents bigint,
        ADD COLUMN max_anonymous_user_document_bytes bigint,
        ADD COLUMN max_anonymous_user_writes_per_second double precision;
      -- Apps of an earlier schema: their config's limits, else this version's defaults (the
      -- server writes its own with every app it stores: config/app-config.ts).
      UPDATE app_usage u SET
        max_anonymous_documents = coalesce((a.config #>> '{limits,anonymousDocuments}')::bigint, u.max_documents / 2),
        max_anonymous_document_bytes = coalesce((a.config #>> '{limits,anonymousDocumentBytes}')::bigint, u.max_document_bytes / 2),
        max_user_documents = coalesce((a.config #>> '{limits,documentsPerUser}')::bigint, 10000),
        max_user_document_bytes = coalesce((a.config #>> '{limits,documentBytesPerUser}')::bigint, 33554432),
        max_user_writes_per_second = coalesce((a.config #>> '{limits,writesPerSecondPerUser}')::double precision, 200),
        max_anonymous_user_documents = coalesce((a.config #>> '{limits,documentsPerAnonymousUser}')::bigint, 1000),
        max_anonymous_user_document_bytes = coalesce((a.config #>> '{limits,documentBytesPerAnonymousUser}')::bigint, 1048576),
        max_anonymous_user_writes_per_second = coalesce((a.config #>> '{limits,writesPerSecondPerAnonymousUser}')::double precision, 100)
        FROM apps a WHERE a.app_id = u.app_id;

      ALTER TABLE app_usage_counts
        ADD COLUMN anonymous_documents bigint NOT NULL DEFAULT 0,
        ADD COLUMN anonymous_document_bytes bigint NOT NULL DEFAULT 0;

      CREATE TABLE user_usage (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        user_id text NOT NULL,
        documents bigint NOT NULL DEFAULT 0,
        document_bytes bigint NOT NULL DEFAULT 0,
        allowance double precision NOT NULL DEFAULT 0,
        refilled_at timestamptz,
        spent_by xid8,
        PRIMARY KEY (app_id, user_id)
      );

      DROP TRIGGER documents_inserted ON documents;
      DROP TRIGGER documents_updated ON documents;
      DROP TRIGGER documents_deleted ON documents;
      DROP TRIGGER users_inserted ON users;
      DROP TRIGGER users_deleted ON users;
      DROP TRIGGER registrations_inserted ON userpass_accounts;
      DROP TRIGGER registrations_updated ON userpass_accounts;
      DROP TRIGGER registrations_deleted ON userpass_accounts;
      DROP FUNCTION documents_inserted(), documents_updated(), documents_deleted(), users_inserted(),
        users_deleted(), registrations_inserted(), registrations_updated(), registrations_deleted(),
        count_usage(text, bigint, bigint, bigint);

      CREATE FUNCTION count_usage(app text, d_users bigint, d_documents bigint, d_bytes bigint,
                                  d_anonymous_documents bigint, d_anonymous_bytes bigint) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
          l app_usage%ROWTYPE;
          t_users bigint;
          t_documents bigint;
          t_bytes bigint;
          t_anonymous_documents bigint;
          t_anonymous_bytes bigint;
        BEGIN
          IF d_users = 0 AND d_documents = 0 AND d_bytes = 0 AND d_anonymous_documents = 0 AND d_anonymous_bytes = 0 THEN
            RETURN;
          END IF;
          -- (Not for an app being deleted: its rows go with it, and so do its counts.)
          INSERT INTO app_usage_counts AS c (app_id, slot, users, documents, document_bytes, anonymous_documents,
                                             anonymous_document_bytes)
               SELECT app, pg_backend_pid() % 16, d_users, d_documents, d_bytes, d_anonymous_documents, d_anonymous_bytes
                WHERE EXISTS (SELECT 1 FROM apps WHERE app_id = app)
          ON CONFLICT (app_id, slot) DO UPDATE SET users = c.users + excluded.users,
               documents = c.documents + excluded.documents, document_bytes = c.document_bytes + excluded.document_bytes,
               anonymous_documents = c.anonymous_documents + excluded.anonymous_documents,
               anonymous_document_bytes = c.anonymous_document_bytes + excluded.anonymous_document_bytes;
          IF (d_users <= 0 AND d_documents <= 0 AND d_bytes <= 0 AND d_anonymous_documents <= 0 AND d_anonymous_bytes <= 0)
             OR current_setting('emulator.limits', true) = 'off' THEN
            RETURN;
          END IF;
          SELECT * INTO l FROM app_usage WHERE app_id = app;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          -- (Inline rather than a function: plpgsql keeps this plan; a call cost a third of an insert.)
          SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0),
                 coalesce(sum(c.anonymous_documents), 0), coalesce(sum(c.anonymous_document_bytes), 0)
            INTO t_users, t_documents, t_bytes, t_anonymous_documents, t_anonymous_bytes
            FROM app_usage_counts c WHERE c.app_id = app;
          IF d_users > 1 OR d_documents > 1 OR d_bytes > 65536 OR d_anonymous_documents > 1 OR d_anonymous_bytes > 65536
             OR (d_users > 0 AND t_users + greatest(l.max_users / 10, 1000) > l.max_users)
             OR (d_documents > 0 AND t_documents + greatest(l.max_documents / 10, 1000) > l.max_documents)
             OR (d_bytes > 0 AND t_bytes + greatest(l.max_document_bytes / 10, 16777216) > l.max_document_bytes)
             OR (d_anonymous_documents > 0
                 AND t_anonymous_documents + greatest(l.max_anonymous_documents / 10, 1000) > l.max_anonymous_documents)
             OR (d_anonymous_bytes > 0
                 AND t_anonymous_bytes + greatest(l.max_anonymous_document_bytes / 10, 16777216) > l.max_anonymous_document_bytes)
          THEN
            -- Near a limit (or a large write): the app's writers take turns, each seeing the last one's commit.
            PERFORM pg_advisory_xact_lock(1634758515, hashtext(app));
            SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0),
                   coalesce(sum(c.anonymous_documents), 0), coalesce(sum(c.anonymous_document_bytes), 0)
              INTO t_users, t_documents, t_bytes, t_anonymous_documents, t_anonymous_bytes
              FROM app_usage_counts c WHERE c.app_id = app;
          END IF;
          IF d_users > 0 AND t_users > l.max_users THEN
            RAISE EXCEPTION 'users' USING ERRCODE = '53400', DETAIL = l.max_users::text;
          END IF;
          IF d_documents > 0 AND t_documents > l.max_documents THEN
            RAISE EXCEPTION 'documents' USING ERRCODE = '53400', DETAIL = l.max_documents::text;
          END IF;
          IF d_bytes > 0 AND t_bytes > l.max_document_bytes THEN
            RAISE EXCEPTION 'documentBytes' USING ERRCODE = '53400', DETAIL = l.max_document_bytes::text;
          END IF;
          IF d_anonymous_documents > 0 AND t_anonymous_documents > l.max_anonymous_documents THEN
            RAISE EXCEPTION 'anonymousDocuments' USING ERRCODE = '53400', DETAIL = l.max_anonymous_documents::text;
          END IF;
          IF d_anonymous_bytes > 0 AND t_anonymous_bytes > l.max_anonymous_document_bytes THEN
            RAISE EXCEPTION 'anonymousDocumentBytes' USING ERRCODE = '53400', DETAIL = l.max_anonymous_document_bytes::text;
          END IF;
        END $$;

      -- One user's documents, bytes and writes (documents inserted or changed) as a statement
      -- changes them; 'anonymous': the writer is anonymous (its limits apply).
      CREATE FUNCTION count_user_usage(app text, who text, anonymous boolean, d_documents bigint, d_bytes bigint,
                                       writes bigint) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
          l app_usage%ROWTYPE;
          u user_usage%ROWTYPE;
          checked boolean := current_setting('emulator.limits', true) IS DISTINCT FROM 'off';
          max_documents bigint;
          max_bytes bigint;
          rate double precision;
          spent_now timestamptz;
          left_now double precision;
        BEGIN
          IF d_documents = 0 AND d_bytes = 0 AND writes = 0 THEN
            RETURN;
          END IF;
          SELECT * INTO l FROM app_usage WHERE app_id = app;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          SELECT * INTO u FROM user_usage WHERE app_id = app AND user_id = who FOR UPDATE;
          IF NOT FOUND THEN
            INSERT INTO user_usage (app_id, user_id) VALUES (app, who) ON CONFLICT DO NOTHING;
            SELECT * INTO u FROM user_usage WHERE app_id = app AND user_id = who FOR UPDATE;
          END IF;
          IF anonymous THEN
            max_documents := l.max_anonymous_user_documents;
            max_bytes := l.max_anonymous_user_document_bytes;
            rate := l.max_anonymous_user_writes_per_second;
          ELSE
            max_documents := l.max_user_documents;
            max_bytes := l.max_user_document_bytes;
            rate := l.max_user_writes_per_second;
          END IF;
          IF writes > 0 AND rate IS NOT NULL THEN
            spent_now := clock_timestamp();
            left_now := CASE WHEN u.refilled_at IS NULL THEN rate
              ELSE least(rate, u.allowance + rate * extract(epoch FROM spent_now - u.refilled_at)) END;
            IF checked AND left_now < 1 AND u.spent_by IS DISTINCT FROM pg_current_xact_id() THEN
              RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'writesPerSecondPerAnonymousUser' ELSE 'writesPerSecondPerUser' END
                USING ERRCODE = '53400', DETAIL = rate::text;
            END IF;
            UPDATE user_usage SET documents = documents + d_documents, document_bytes = document_bytes + d_bytes,
                   allowance = left_now - writes, refilled_at = spent_now, spent_by = pg_current_xact_id()
             WHERE app_id = app AND user_id = who
            RETURNING * INTO u;
          ELSE
            UPDATE user_usage SET documents = documents + d_documents, document_bytes = document_bytes + d_bytes
             WHERE app_id = app AND user_id = who
            RETURNING * INTO u;
          END IF;
          IF NOT checked THEN
            RETURN;
          END IF;
          IF d_documents > 0 AND u.documents > max_documents THEN
            RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'documentsPerAnonymousUser' ELSE 'documentsPerUser' END
              USING ERRCODE = '53400', DETAIL = max_documents::text;
          END IF;
          IF d_bytes > 0 AND u.document_bytes > max_bytes THEN
            RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'documentBytesPerAnonymousUser' ELSE 'documentBytesPerUser' END
              USING ERRCODE = '53400', DETAIL = max_bytes::text;
          END IF;
        END $$;

      CREATE FUNCTION documents_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, count(*), sum(bytes), count(*) FILTER (WHERE owner_anonymous),
                              coalesce(sum(bytes) FILTER (WHERE owner_anonymous), 0))
             FROM (SELECT app_id, owner_anonymous, octet_length(ejson) AS bytes FROM new_rows) AS r GROUP BY app_id;
          PERFORM count_user_usage(app_id, owner, bool_or(owner_anonymous), count(*), sum(bytes), count(*))
             FROM (SELECT app_id, owner, owner_anonymous, octet_length(ejson) AS bytes
                     FROM new_rows WHERE owner IS NOT NULL) AS r
            GROUP BY app_id, owner ORDER BY app_id, owner;
          RETURN NULL;
        END $$;
      CREATE FUNCTION documents_updated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, 0, sum(bytes), sum(anonymous_documents), sum(anonymous_bytes)) FROM (
            SELECT app_id, octet_length(ejson) AS bytes, CASE WHEN owner_anonymous THEN 1 ELSE 0 END AS anonymous_documents,
                   CASE WHEN owner_anonymous THEN octet_length(ejson) ELSE 0 END AS anonymous_bytes FROM new_rows
            UNION ALL SELECT app_id, -octet_length(ejson), CASE WHEN owner_anonymous THEN -1 ELSE 0 END,
                   CASE WHEN owner_anonymous THEN -octet_length(ejson) ELSE 0 END FROM old_rows) AS changed GROUP BY app_id;
          PERFORM count_user_usage(app_id, owner, coalesce(bool_or(anonymous), false), sum(documents), sum(bytes), sum(writes))
             FROM (SELECT app_id, owner, owner_anonymous AS anonymous, 1 AS documents, octet_length(ejson) AS bytes, 1 AS writes
                     FROM new_rows WHERE owner IS NOT NULL
                   UNION ALL SELECT app_id, owner, NULL, -1, -octet_length(ejson), 0 FROM old_rows WHERE owner IS NOT NULL) AS c
            GROUP BY app_id, owner ORDER BY app_id, owner;
          RETURN NULL;
        END $$;
      CREATE FUNCTION documents_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, 0, -count(*), -sum(bytes), -count(*) FILTER (WHERE owner_anonymous),
                              -coalesce(sum(bytes) FILTER (WHERE owner_anonymous), 0))
             FROM (SELECT app_id, owner_anonymous, octet_length(ejson) AS bytes FROM old_rows) AS r GROUP BY app_id;
          PERFORM count_user_usage(app_id, owner, false, -count(*), -sum(bytes), 0)
             FROM (SELECT app_id, owner, octet_length(ejson) AS bytes FROM old_rows WHERE owner IS NOT NULL) AS r
            GROUP BY app_id, owner ORDER BY app_id, owner;
          RETURN NULL;
        END $$;
      CREATE TRIGGER documents_inserted AFTER INSERT ON documents REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_inserted();
      CREATE TRIGGER documents_updated AFTER UPDATE ON documents REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_updated();
      CREATE TRIGGER documents_deleted AFTER DELETE ON documents REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION documents_deleted();

      -- Users and registrations as in version 3, through the new count_usage.
      CREATE FUNCTION users_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, count(*), 0, 0, 0, 0) FROM new_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION users_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, -count(*), 0, 0, 0, 0) FROM old_rows GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER users_inserted AFTER INSERT ON users REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION users_inserted();
      CREATE TRIGGER users_deleted AFTER DELETE ON users REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION users_deleted();
      CREATE FUNCTION registrations_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, count(*), 0, 0, 0, 0) FROM new_rows WHERE user_id IS NULL GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION registrations_updated() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, sum(n), 0, 0, 0, 0) FROM (
            SELECT app_id, 1 AS n FROM new_rows WHERE user_id IS NULL
            UNION ALL SELECT app_id, -1 FROM old_rows WHERE user_id IS NULL) AS changed GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE FUNCTION registrations_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM count_usage(app_id, -count(*), 0, 0, 0, 0) FROM old_rows WHERE user_id IS NULL GROUP BY app_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER registrations_inserted AFTER INSERT ON userpass_accounts REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_inserted();
      CREATE TRIGGER registrations_updated AFTER UPDATE ON userpass_accounts
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_updated();
      CREATE TRIGGER registrations_deleted AFTER DELETE ON userpass_accounts REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION registrations_deleted();
    `,
  },
  {
    version: 7,
    name: "inserts of several writers in one statement (group commit)",
    // docs/decisions/0022-group-commit.md. Concurrent insertOne actions of an app are written
    // together, one statement and one commit for the group. Two changes make that exact:
    // - A statement marked grouped (emulator.grouped = 'on' for its transaction) writes one
    //   document for each of several actions: a user's allowance must cover every one of that
    //   user's documents in it (each action needs a write left), rather than the first only as
    //   for one action's statement. Refused, the group is written again one action at a time.
    // - A write of up to 64 documents and 1 MiB (a group) far from the app's limits is checked
    //   without the app's lock, as one document was: writers far from a limit could overshoot it
    //   only with more groups in flight at once than the tenth of the limit kept free (at least
    //   1,000 documents and 16 MiB: 16 groups).
    sql: `
      CREATE OR REPLACE FUNCTION count_usage(app text, d_users bigint, d_documents bigint, d_bytes bigint,
                                  d_anonymous_documents bigint, d_anonymous_bytes bigint) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
          l app_usage%ROWTYPE;
          t_users bigint;
          t_documents bigint;
          t_bytes bigint;
          t_anonymous_documents bigint;
          t_anonymous_bytes bigint;
        BEGIN
          IF d_users = 0 AND d_documents = 0 AND d_bytes = 0 AND d_anonymous_documents = 0 AND d_anonymous_bytes = 0 THEN
            RETURN;
          END IF;
          -- (Not for an app being deleted: its rows go with it, and so do its counts.)
          INSERT INTO app_usage_counts AS c (app_id, slot, users, documents, document_bytes, anonymous_documents,
                                             anonymous_document_bytes)
               SELECT app, pg_backend_pid() % 16, d_users, d_documents, d_bytes, d_anonymous_documents, d_anonymous_bytes
                WHERE EXISTS (SELECT 1 FROM apps WHERE app_id = app)
          ON CONFLICT (app_id, slot) DO UPDATE SET users = c.users + excluded.users,
               documents = c.documents + excluded.documents, document_bytes = c.document_bytes + excluded.document_bytes,
               anonymous_documents = c.anonymous_documents + excluded.anonymous_documents,
               anonymous_document_bytes = c.anonymous_document_bytes + excluded.anonymous_document_bytes;
          IF (d_users <= 0 AND d_documents <= 0 AND d_bytes <= 0 AND d_anonymous_documents <= 0 AND d_anonymous_bytes <= 0)
             OR current_setting('emulator.limits', true) = 'off' THEN
            RETURN;
          END IF;
          SELECT * INTO l FROM app_usage WHERE app_id = app;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          -- (Inline rather than a function: plpgsql keeps this plan; a call cost a third of an insert.)
          SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0),
                 coalesce(sum(c.anonymous_documents), 0), coalesce(sum(c.anonymous_document_bytes), 0)
            INTO t_users, t_documents, t_bytes, t_anonymous_documents, t_anonymous_bytes
            FROM app_usage_counts c WHERE c.app_id = app;
          IF d_users > 1 OR d_documents > 64 OR d_bytes > 1048576 OR d_anonymous_documents > 64
             OR d_anonymous_bytes > 1048576
             OR (d_users > 0 AND t_users + greatest(l.max_users / 10, 1000) > l.max_users)
             OR (d_documents > 0 AND t_documents + greatest(l.max_documents / 10, 1000) > l.max_documents)
             OR (d_bytes > 0 AND t_bytes + greatest(l.max_document_bytes / 10, 16777216) > l.max_document_bytes)
             OR (d_anonymous_documents > 0
                 AND t_anonymous_documents + greatest(l.max_anonymous_documents / 10, 1000) > l.max_anonymous_documents)
             OR (d_anonymous_bytes > 0
                 AND t_anonymous_bytes + greatest(l.max_anonymous_document_bytes / 10, 16777216) > l.max_anonymous_document_bytes)
          THEN
            -- Near a limit (or a large write): the app's writers take turns, each seeing the last one's commit.
            PERFORM pg_advisory_xact_lock(1634758515, hashtext(app));
            SELECT coalesce(sum(c.users), 0), coalesce(sum(c.documents), 0), coalesce(sum(c.document_bytes), 0),
                   coalesce(sum(c.anonymous_documents), 0), coalesce(sum(c.anonymous_document_bytes), 0)
              INTO t_users, t_documents, t_bytes, t_anonymous_documents, t_anonymous_bytes
              FROM app_usage_counts c WHERE c.app_id = app;
          END IF;
          IF d_users > 0 AND t_users > l.max_users THEN
            RAISE EXCEPTION 'users' USING ERRCODE = '53400', DETAIL = l.max_users::text;
          END IF;
          IF d_documents > 0 AND t_documents > l.max_documents THEN
            RAISE EXCEPTION 'documents' USING ERRCODE = '53400', DETAIL = l.max_documents::text;
          END IF;
          IF d_bytes > 0 AND t_bytes > l.max_document_bytes THEN
            RAISE EXCEPTION 'documentBytes' USING ERRCODE = '53400', DETAIL = l.max_document_bytes::text;
          END IF;
          IF d_anonymous_documents > 0 AND t_anonymous_documents > l.max_anonymous_documents THEN
            RAISE EXCEPTION 'anonymousDocuments' USING ERRCODE = '53400', DETAIL = l.max_anonymous_documents::text;
          END IF;
          IF d_anonymous_bytes > 0 AND t_anonymous_bytes > l.max_anonymous_document_bytes THEN
            RAISE EXCEPTION 'anonymousDocumentBytes' USING ERRCODE = '53400', DETAIL = l.max_anonymous_document_bytes::text;
          END IF;
        END $$;

      -- One user's documents, bytes and writes (documents inserted or changed) as a statement
      -- changes them; 'anonymous': the writer is anonymous (its limits apply).
      CREATE OR REPLACE FUNCTION count_user_usage(app text, who text, anonymous boolean, d_documents bigint, d_bytes bigint,
                                       writes bigint) RETURNS void
        LANGUAGE plpgsql AS $$
        DECLARE
          l app_usage%ROWTYPE;
          u user_usage%ROWTYPE;
          checked boolean := current_setting('emulator.limits', true) IS DISTINCT FROM 'off';
          max_documents bigint;
          max_bytes bigint;
          rate double precision;
          spent_now timestamptz;
          left_now double precision;
        BEGIN
          IF d_documents = 0 AND d_bytes = 0 AND writes = 0 THEN
            RETURN;
          END IF;
          SELECT * INTO l FROM app_usage WHERE app_id = app;
          IF NOT FOUND THEN
            RETURN;
          END IF;
          SELECT * INTO u FROM user_usage WHERE app_id = app AND user_id = who FOR UPDATE;
          IF NOT FOUND THEN
            INSERT INTO user_usage (app_id, user_id) VALUES (app, who) ON CONFLICT DO NOTHING;
            SELECT * INTO u FROM user_usage WHERE app_id = app AND user_id = who FOR UPDATE;
          END IF;
          IF anonymous THEN
            max_documents := l.max_anonymous_user_documents;
            max_bytes := l.max_anonymous_user_document_bytes;
            rate := l.max_anonymous_user_writes_per_second;
          ELSE
            max_documents := l.max_user_documents;
            max_bytes := l.max_user_document_bytes;
            rate := l.max_user_writes_per_second;
          END IF;
          IF writes > 0 AND rate IS NOT NULL THEN
            spent_now := clock_timestamp();
            left_now := CASE WHEN u.refilled_at IS NULL THEN rate
              ELSE least(rate, u.allowance + rate * extract(epoch FROM spent_now - u.refilled_at)) END;
            IF checked AND u.spent_by IS DISTINCT FROM pg_current_xact_id()
               AND (left_now < 1 OR (left_now < writes AND current_setting('emulator.grouped', true) = 'on')) THEN
              RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'writesPerSecondPerAnonymousUser' ELSE 'writesPerSecondPerUser' END
                USING ERRCODE = '53400', DETAIL = rate::text;
            END IF;
            UPDATE user_usage SET documents = documents + d_documents, document_bytes = document_bytes + d_bytes,
                   allowance = left_now - writes, refilled_at = spent_now, spent_by = pg_current_xact_id()
             WHERE app_id = app AND user_id = who
            RETURNING * INTO u;
          ELSE
            UPDATE user_usage SET documents = documents + d_documents, document_bytes = document_bytes + d_bytes
             WHERE app_id = app AND user_id = who
            RETURNING * INTO u;
          END IF;
          IF NOT checked THEN
            RETURN;
          END IF;
          IF d_documents > 0 AND u.documents > max_documents THEN
            RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'documentsPerAnonymousUser' ELSE 'documentsPerUser' END
              USING ERRCODE = '53400', DETAIL = max_documents::text;
          END IF;
          IF d_bytes > 0 AND u.document_bytes > max_bytes THEN
            RAISE EXCEPTION '%', CASE WHEN anonymous THEN 'documentBytesPerAnonymousUser' ELSE 'documentBytesPerUser' END
              USING ERRCODE = '53400', DETAIL = max_bytes::text;
          END IF;
        END $$;
    `,
  },
  {
    version: 8,
    name: "a user's sessions in order",
    // The login's trim keeps a user's newest sessions (ORDER BY seq DESC OFFSET the limit): with
    // (app_id, user_id) only, it read all of the user's sessions and sorted them on every login
    // (and the planner, on a small table, walked the whole table). In order in the index, the trim
    // reads them newest first and ends; the listing of a user's sessions is served too.
    sql: `
      CREATE INDEX sessions_by_user_in_order ON sessions (app_id, user_id, seq);
      DROP INDEX sessions_by_user;
    `,
  },
  {
    version: 9,
    name: "each user's count of sessions",
    // A login trims the user's oldest sessions past the app's limit. Counted, it knows how many
    // to end (most often none; at the limit, one, read oldest first) instead of walking the newest
    // `limit` of them on every login. Every statement that adds or ends a user's sessions keeps the
    // count, under the user's row lock taken before any session row (store/postgres/sessions.ts).
    sql: `
      ALTER TABLE users ADD COLUMN session_count integer NOT NULL DEFAULT 0;
      UPDATE users u SET session_count = c.n
        FROM (SELECT app_id, user_id, count(*)::integer AS n FROM sessions GROUP BY app_id, user_id) AS c
       WHERE u.app_id = c.app_id AND u.id = c.user_id;
    `,
  },
  {
    version: 10,
    name: "retention: ended mail, expired tokens and sessions found by when they end",
    // The retention sweeps (store/postgres/retention.ts) remove mail whose delivery ended, tokens
    // and sessions past their expiry, in batches oldest first: each kind in order of when it ended.
    // Mail ends when it is captured (no SMTP) or its delivery is sent or finally failed; queued
    // mail has no end yet. Mail of an earlier schema ends when it was captured.
    sql: `
      ALTER TABLE mail ADD COLUMN done_at bigint;
      UPDATE mail SET done_at = created_at WHERE delivery_state IS DISTINCT FROM 'queued';
      CREATE INDEX mail_done ON mail (done_at) WHERE done_at IS NOT NULL;
      CREATE INDEX auth_tokens_by_expiry ON auth_tokens (expires_at);
      CREATE INDEX sessions_by_expiry ON sessions (((doc->>'expiresAt')::float8));
    `,
  },
  {
    version: 11,
    name: "scheduled triggers: the last time each one was claimed",
    // One row per scheduled trigger of an app (runtime/scheduled-triggers.ts): the instance that
    // moves `last_at` forward runs the trigger for that time (told the time before, `previous_at`,
    // by the same statement); the row stays one however long the trigger runs.
    sql: `
      CREATE TABLE scheduled_triggers (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        name text NOT NULL,
        last_at bigint NOT NULL,
        previous_at bigint,
        PRIMARY KEY (app_id, name)
      );
    `,
  },
  {
    version: 12,
    name: "retention: anonymous users found by when they were created",
    // Anonymous users live 90 days after their creation (store.ts `anonymousUserLifetimeMs`); the
    // retention sweep (store/postgres/retention.ts) removes the oldest of them first. Only anonymous
    // users are in the index (the predicate is the sweep's, word for word, so the planner uses it):
    // a sweep reads the few past their lifetime, never the users who signed up.
    sql: `
      CREATE INDEX anonymous_users_by_creation ON users (((doc->>'createdAt')::float8))
       WHERE doc->'identities' @> '[{"provider_type": "anon-user"}]'
         AND NOT jsonb_path_exists(doc->'identities', '$[*] ? (@.provider_type != "anon-user")');
    `,
  },
  {
    version: 13,
    name: "database trigger events kept with their writes",
    // Database triggers run at least once (docs/decisions/0031-triggers.md): a write whose change
    // a trigger of the app takes keeps the event here in its own transaction, leased to the
    // instance that made it (store/postgres/trigger-events.ts). That instance runs it and removes
    // it; one that stops renewing its leases (it died) leaves its events to whichever instance
    // claims them next.
    sql: `
      CREATE TABLE trigger_events (
        id bigserial PRIMARY KEY,
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        event text NOT NULL,
        instance_id text NOT NULL,
        lease_until timestamptz NOT NULL
      );
      CREATE INDEX trigger_events_by_lease ON trigger_events (lease_until);
    `,
  },
  {
    version: 14,
    name: "suspended database triggers",
    // A collection's database trigger is suspended when its collection is dropped or renamed over
    // (docs/decisions/0057-trigger-suspension.md): kept here in the transaction of the write that
    // suspends it, so every instance, and one that starts later, knows it; removed when the
    // trigger is resumed, the app's settings are replaced or the app is reset.
    sql: `
      CREATE TABLE trigger_suspensions (
        app_id text NOT NULL REFERENCES apps ON DELETE CASCADE,
        name text NOT NULL,
        since bigint NOT NULL,
        reason text NOT NULL,
        PRIMARY KEY (app_id, name)
      );
    `,
  },
  {
    version: 15,
    name: "collections that have held a Decimal128",
    // A number in a query may equal a Decimal128 of any text (5 and 5.00), which the GIN index
    // cannot look up: a read whose collection never held one needs only the number's own text,
    // which it can (store/postgres/pushdown.ts). The flag is set by the statement that writes the
    // first such document, in its transaction (the documents' triggers), and goes with the
    // collection's row (a drop); set from the documents here for the collections there are.
    sql: `
      ALTER TABLE collections ADD COLUMN decimals boolean NOT NULL DEFAULT false;
      UPDATE collections c SET decimals = true
       WHERE EXISTS (SELECT 1 FROM documents d
                      WHERE d.app_id = c.app_id AND d.db = c.db AND d.coll = c.coll
                        AND strpos(d.ejson, '"$numberDecimal"') > 0);
      CREATE FUNCTION mark_decimals() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE collections c SET decimals = true
            FROM (SELECT DISTINCT app_id, db, coll FROM new_rows WHERE strpos(ejson, '"$numberDecimal"') > 0) AS n
           WHERE c.app_id = n.app_id AND c.db = n.db AND c.coll = n.coll AND NOT c.decimals;
          RETURN NULL;
        END $$;
      CREATE TRIGGER documents_inserted_decimals AFTER INSERT ON documents REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION mark_decimals();
      CREATE TRIGGER documents_updated_decimals AFTER UPDATE ON documents REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION mark_decimals();
    `,
  },
  {
    version: 16,
    name: "the fields that have held a Decimal128",
    // Which top-level fields have held a Decimal128 (as the field's value or an element of its
    // array: what an equality on the field compares), so that a number's equality on any other
    // field of the collection is looked up in the GIN index (store/postgres/pushdown.ts); kept as
    // `decimals` is (that flag stays set too, for servers of version 15 still running).
    sql: `
      ALTER TABLE collections ADD COLUMN decimal_fields text[] NOT NULL DEFAULT '{}';
      UPDATE collections c SET decimal_fields = f.fields
        FROM (SELECT d.app_id, d.db, d.coll, array_agg(DISTINCT e.key ORDER BY e.key) AS fields
                FROM documents d, jsonb_each(d.doc) AS e
               WHERE strpos(d.ejson, '"$numberDecimal"') > 0 AND jsonb_path_exists(e.value, 'lax $."$numberDecimal"')
               GROUP BY d.app_id, d.db, d.coll) AS f
       WHERE c.app_id = f.app_id AND c.db = f.db AND c.coll = f.coll;
      CREATE OR REPLACE FUNCTION mark_decimals() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE collections c SET decimals = true,
                 decimal_fields = ARRAY(SELECT DISTINCT f FROM unnest(c.decimal_fields || n.fields) AS f ORDER BY f)
            FROM (SELECT r.app_id, r.db, r.coll, array_agg(DISTINCT e.key) AS fields
                    FROM new_rows r, jsonb_each(r.doc) AS e
                   WHERE strpos(r.ejson, '"$numberDecimal"') > 0
                     AND jsonb_path_exists(e.value, 'lax $."$numberDecimal"')
                   GROUP BY r.app_id, r.db, r.coll) AS n
           WHERE c.app_id = n.app_id AND c.db = n.db AND c.coll = n.coll AND NOT n.fields <@ c.decimal_fields;
          RETURN NULL;
        END $$;
    `,
  },
  {
    version: 17,
    name: "numeric _ids keyed by value",
    // An Int64 or Decimal128 `_id` was keyed by its Extended JSON text, so a query by the same
    // number of another type missed it and a second document of that value could be stored
    // (data/documents.ts' idKey now keys numbers by value). The few rows such `_id`s have are
    // keyed again; one whose value another row of its collection holds already keeps its key.
    sql: "",
    run: async (client) => {
      // (The old key is `e:` and the _id's canonical Extended JSON: short, never hashed.)
      const { rows } = await client.query<{ app_id: string; db: string; coll: string; id_key: string }>(
        `SELECT app_id, db, coll, id_key FROM documents
          WHERE id_key LIKE 'e:{"$numberLong":%' OR id_key LIKE 'e:{"$numberDecimal":%'`,
      );
      for (const row of rows) {
        const key = idRowKey(fromEJSONText(row.id_key.slice(2)));
        if (key === row.id_key) continue;
        await client.query(
          `UPDATE documents SET id_key = $5 WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = $4
             AND NOT EXISTS (SELECT 1 FROM documents WHERE app_id = $1 AND db = $2 AND coll = $3 AND id_key = $5)`,
          [row.app_id, row.db, row.coll, row.id_key, key],
        );
      }
    },
  },
  {
    version: 18,
    name: "a stream's place taken in one statement",
    // A stream's place (store/postgres/stream-places.ts) was taken in a transaction of five round
    // trips under its app's advisory lock, held across three of them: under load, opens of one app
    // queued on the lock, each holding a pooled connection. The same steps as one function, called
    // in one statement: the lock is held from the count to the commit. Each statement of a function
    // reads with a new snapshot, so the count sees every place taken before the lock was granted.
    // (A server of version 17 still running takes places its way, under the same lock.)
    sql: `
      CREATE FUNCTION take_stream_place(place text, app text, usr text, addr text, lease float8,
                                        per_app integer, per_user integer, per_address integer)
        RETURNS text LANGUAGE plpgsql AS $$
        DECLARE
          n_app integer;
          n_user integer;
          n_address integer;
        BEGIN
          PERFORM pg_advisory_xact_lock(1937007986, hashtext(app));
          SELECT count(*), count(*) FILTER (WHERE user_id = usr), count(*) FILTER (WHERE address = addr)
            INTO n_app, n_user, n_address
            FROM open_streams WHERE app_id = app AND expires_at > clock_timestamp();
          IF n_app >= per_app THEN RETURN 'app'; END IF;
          IF n_user >= per_user THEN RETURN 'user'; END IF;
          IF n_address >= per_address THEN RETURN 'address'; END IF;
          INSERT INTO open_streams (id, app_id, user_id, address, expires_at)
            VALUES (place, app, usr, addr, clock_timestamp() + make_interval(secs => lease));
          RETURN NULL;
        END $$;
    `,
  },
  {
    version: 19,
    name: "collections that have held a Decimal128 anywhere",
    // A number's equality at a dotted path may meet a Decimal128 at any depth, which the GIN index
    // cannot look up: the path is looked up there only in a collection that has never held one
    // (store/postgres/pushdown.ts). Since version 16 the flag was set only with a top-level
    // field's: set now for a Decimal128 anywhere in a document (its text, as version 15 did), read
    // again from the documents for the collections there are.
    sql: `
      UPDATE collections c SET decimals = true
       WHERE NOT c.decimals
         AND EXISTS (SELECT 1 FROM documents d
                      WHERE d.app_id = c.app_id AND d.db = c.db AND d.coll = c.coll
                        AND strpos(d.ejson, '"$numberDecimal"') > 0);
      CREATE OR REPLACE FUNCTION mark_decimals() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          UPDATE collections c SET decimals = true,
                 decimal_fields = ARRAY(SELECT DISTINCT f FROM unnest(c.decimal_fields || n.fields) AS f ORDER BY f)
            FROM (SELECT r.app_id, r.db, r.coll,
                         coalesce(array_agg(DISTINCT e.key) FILTER (WHERE e.key IS NOT NULL), '{}') AS fields
                    FROM new_rows r
                    LEFT JOIN LATERAL (SELECT j.key FROM jsonb_each(r.doc) AS j
                                        WHERE jsonb_path_exists(j.value, 'lax $."$numberDecimal"')) AS e ON true
                   WHERE strpos(r.ejson, '"$numberDecimal"') > 0
                   GROUP BY r.app_id, r.db, r.coll) AS n
           WHERE c.app_id = n.app_id AND c.db = n.db AND c.coll = n.coll
             AND (NOT c.decimals OR NOT n.fields <@ c.decimal_fields);
          RETURN NULL;
        END $$;
    `,
  },
  {
    version: 20,
    name: "the most collections an app may hold",
    // A write that would create a collection past the app's limit is refused (documents.ts
    // `ensureCollection`, under the app's collection lock). Apps of an earlier schema: their
    // config's limit, else this version's default (the server writes its own with every app).
    sql: `
      ALTER TABLE app_usage ADD COLUMN max_collections bigint;
      UPDATE app_usage u SET max_collections = coalesce((a.config #>> '{limits,collections}')::bigint, 10000)
        FROM apps a WHERE a.app_id = u.app_id;
    `,
  },
];

export const latestVersion = migrations.reduce((n, m) => Math.max(n, m.version), 0);

/** Any 64-bit number shared by every instance of this server: the key of the migration lock. */
/** The advisory lock migrations run under (instances starting together take turns). */
export const migrationLock = 4_837_201_990_111;

export class SchemaTooNewError extends Error {}

/**
 * Brings the schema up to date; answers the versions applied now. Instances starting together
 * queue on the lock; the first applies, the rest find nothing to do.
 */
export async function migrate(client: pg.ClientBase): Promise<number[]> {
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock($1)", [migrationLock]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ version: number | null }>(
      "SELECT max(version) AS version FROM schema_migrations",
    );
    const current = rows[0]?.version ?? 0;
    if (current > latestVersion) {
      throw new SchemaTooNewError(
        `the database schema is version ${current}, newer than this server's ${latestVersion}: run a newer server`,
      );
    }
    const applied: number[] = [];
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      if (migration.sql !== "") await client.query(migration.sql);
      await migration.run?.(client);
      await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
    await client.query("COMMIT");
    return applied;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  }
}
