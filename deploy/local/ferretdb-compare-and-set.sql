-- Applied by start-servers.sh to the local PostgreSQL that FerretDB stores its data in, before
-- ferretdb-indexes.sql, whose event trigger guards each table FerretDB creates (and each one
-- that exists) with `rs_guard_ferretdb_table`, as it indexes it.
--
-- FerretDB 1.x updates a document by reading it, changing it in Go and writing it back by its
-- record, so two processes that compare-and-set one document on its `generation` can both
-- match the generation they read and both write: one change is lost, and both are told they
-- won (docs/decisions/0046). MongoDB applies a single-document update atomically; here a
-- trigger restores that guarantee.
--
-- Every compare-and-set of the stores (libs/store, `OutboxCollection.compareAndSet`) also sets
-- `_cas: {from: [generations it may be stored at], token: <new random id>}`. A write whose
-- `_cas` differs from the row's (a compare-and-set, or any write read before one landed) is
-- allowed only if the row is still at one of the generations it names; otherwise it fails with
-- SQLSTATE 40001 'rs: compare-and-set lost', which the store answers as a lost race. A write
-- that carries the row's `_cas` unchanged (the outbox relay's clean-up after nothing else
-- wrote) goes through as before.
SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION rs_compare_and_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF (NEW._jsonb -> '_cas') IS NOT DISTINCT FROM (OLD._jsonb -> '_cas') THEN
    RETURN NEW;
  END IF;
  IF (NEW._jsonb -> '_cas' -> 'from') @> (OLD._jsonb -> 'generation') THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'rs: compare-and-set lost';
END
$$;

CREATE OR REPLACE FUNCTION rs_guard_ferretdb_table(target regclass) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = target AND tgname = 'rs_compare_and_set') THEN
    EXECUTE format('CREATE TRIGGER rs_compare_and_set BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION rs_compare_and_set()', target);
  END IF;
END
$$;
