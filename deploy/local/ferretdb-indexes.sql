-- Applied by start-servers.sh to the local PostgreSQL that FerretDB stores its data in.
--
-- FerretDB 1.x filters with `_jsonb -> 'field' @> value`, which its own btree indexes cannot
-- serve, so every lookup by _id read the whole table (docs/decisions/0010). Every table
-- FerretDB creates gets GIN indexes on the top-level equalities the services run all the time:
-- `_id` (every read-by-id and compare-and-set), `outboxPending` (the outbox relay), `due`
-- (the scheduler's due slots), `bucket` (reading a whole collection a bucket at a time,
-- docs/decisions/0011) and `userId` (a user's rights and subscriptions: lists, cascades); the
-- history and webhook delivery collections get their own (below).
--
-- fastupdate = off: with GIN's pending list on (PostgreSQL's default) a lookup by `_id` took
-- 1.4-2 ms once the list had filled, 0.05 ms without it, and 11.8 ms under update churn.
SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION rs_ferretdb_index_fields(target text) RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    -- The history collections (`right_history`, `subscription_history`) are read by `span` (a
    -- subject's run of generations, one page's worth) only, and written on the renewal path:
    -- that index and no other (docs/decisions/0016, 0040).
    WHEN target LIKE '%history%' THEN ARRAY['span']
    -- Webhook deliveries: claimed by `_id`, swept by `due`, listed by `endpointId` (0017).
    WHEN target LIKE '%deliveries%' THEN ARRAY['_id', 'due', 'endpointId']
    -- Webhook endpoints: read by `_id`, and by `grantorId` for every event (DESIGN.md 9).
    WHEN target LIKE '%endpoints%' THEN ARRAY['_id', 'grantorId']
    -- The scheduler's due items: written on the renewal path, read by `_id` and by `due` only.
    WHEN target LIKE '%right_expiries%' OR target LIKE '%subscription_schedules%' THEN ARRAY['_id', 'due']
    -- A subscription's changes after creation (docs/decisions/0026): read with it by `subscriptionId`,
    -- with its user's by `userId`, with its bucket's by `bucket`; claimed by `_id`; relayed.
    WHEN target LIKE '%subscription_progress%' THEN ARRAY['_id', 'outboxPending', 'bucket', 'userId', 'subscriptionId']
    -- Rights: also `expiresKey`, by which expiry reads the rights ending together (0027).
    WHEN target LIKE '%.rights\_%' THEN ARRAY['_id', 'outboxPending', 'bucket', 'userId', 'expiresKey']
    -- Every other collection: an index on a field its documents never have still costs an
    -- entry on every write (GIN indexes a missing key as a null item).
    ELSE ARRAY['_id', 'outboxPending', 'bucket', 'userId']
  END
$$;
DROP FUNCTION IF EXISTS rs_ferretdb_index_fields();

CREATE OR REPLACE FUNCTION rs_index_ferretdb_table(target regclass) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  field text;
  name text;
BEGIN
  FOREACH field IN ARRAY rs_ferretdb_index_fields(replace(target::text, '"', '')) LOOP
    name := left(replace(target::text, '"', ''), 40) || '_rs_' || md5(target::text || field);
    name := left(name, 63);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((_jsonb -> %L)) WITH (fastupdate = off)',
                   name, target, field);
  END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION rs_index_ferretdb_tables() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  created record;
BEGIN
  FOR created IN
    SELECT objid FROM pg_event_trigger_ddl_commands()
    WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'
  LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = created.objid AND attname = '_jsonb') THEN
      PERFORM rs_index_ferretdb_table(created.objid::regclass);
    END IF;
  END LOOP;
END
$$;

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = 'rs_index_ferretdb_tables') THEN
    CREATE EVENT TRIGGER rs_index_ferretdb_tables ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
      EXECUTE FUNCTION rs_index_ferretdb_tables();
  END IF;
END
$$;

-- Tables created before this file changed: the missing indexes, none of those it no longer
-- lists, and no pending list anywhere.
DO $$
DECLARE
  existing record;
  field text;
BEGIN
  FOR existing IN
    SELECT a.attrelid::regclass AS target FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE a.attname = '_jsonb' AND c.relkind = 'r'
  LOOP
    PERFORM rs_index_ferretdb_table(existing.target);
    FOREACH field IN ARRAY ARRAY['_id', 'outboxPending', 'due', 'bucket', 'userId', 'subject', 'span', 'endpointId', 'grantorId'] LOOP
      IF NOT field = ANY (rs_ferretdb_index_fields(replace(existing.target::text, '"', ''))) THEN
        EXECUTE format('DROP INDEX IF EXISTS %s',
          quote_ident(split_part(replace(existing.target::text, '"', ''), '.', 1)) || '.' ||
          quote_ident(left(left(replace(existing.target::text, '"', ''), 40) || '_rs_' || md5(existing.target::text || field), 63)));
      END IF;
    END LOOP;
  END LOOP;
  FOR existing IN
    SELECT i.indexrelid::regclass AS target FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_am am ON am.oid = c.relam
    WHERE am.amname = 'gin' AND NOT coalesce(c.reloptions @> ARRAY['fastupdate=off'], false)
  LOOP
    EXECUTE format('ALTER INDEX %s SET (fastupdate = off)', existing.target);
  END LOOP;
END
$$;

-- FerretDB filters with the field name as a parameter (`_jsonb -> $1 @> $2`), and a cached
-- generic plan cannot match `_jsonb -> $1` to the indexes above: once PostgreSQL settled on
-- one (it does when a statement is first run against a small table, as every collection is at
-- first) each lookup read the whole table for the life of the pooled connection. Seen on the
-- outbox relay's full pass: 65 lookups by `outboxPending` of 24 ms each against 10,000
-- renewal records, where the index answers in 0.05 ms. Custom plans always see the field
-- name, and plan in about 0.02 ms. For new connections: FerretDB's pool opens them as it goes,
-- and start-servers.sh starts PostgreSQL with the same setting.
ALTER DATABASE ferretdb SET plan_cache_mode = force_custom_plan;
