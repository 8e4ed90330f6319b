-- Applied by start-servers.sh to the local PostgreSQL that FerretDB stores its data in.
--
-- FerretDB 1.x filters with `_jsonb -> 'field' @> value`, which its own btree indexes cannot
-- serve, so every lookup by _id read the whole table (docs/decisions/0010). This trigger gives
-- each table FerretDB creates GIN indexes on the two equalities the services run all the time:
-- `_id` (every read-by-id and compare-and-set) and `outboxPending` (the outbox relay).
CREATE OR REPLACE FUNCTION rs_index_ferretdb_tables() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE
  created record;
BEGIN
  FOR created IN
    SELECT objid, object_identity FROM pg_event_trigger_ddl_commands()
    WHERE command_tag = 'CREATE TABLE' AND object_type = 'table'
  LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = created.objid AND attname = '_jsonb') THEN
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> ''_id''))', created.object_identity);
      EXECUTE format('CREATE INDEX ON %s USING gin ((_jsonb -> ''outboxPending''))', created.object_identity);
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
