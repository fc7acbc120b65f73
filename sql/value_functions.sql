CREATE FUNCTION index_values(rel regclass, columns text[] DEFAULT NULL, allow_rls boolean DEFAULT false)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _index_values(rel::oid, columns, coalesce(allow_rls, false));
COMMENT ON FUNCTION index_values(regclass, text[], boolean) IS
    'Remember the distinct values of a table''s text-like columns (all, or the listed ones), with embeddings and trigrams, for value correction. Needs ownership of the table.';
CREATE FUNCTION refresh_values(rel regclass DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _refresh_values(rel::oid);
COMMENT ON FUNCTION refresh_values(regclass) IS
    'Bring the value memory up to date: new values added, vanished ones dropped, dropped columns forgotten. NULL: every indexed table the caller owns. Returns values added + removed.';
-- The trigger of keep_values_current(): runs as the extension's owner (whoever wrote to the
-- table may not read it), which hands the refresh to the table's owner; the refresh then takes
-- its embedding settings from the server's configuration, never from the writer's session.
CREATE FUNCTION _values_changed() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM ask._refresh_values_as_owner(TG_RELID);
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _refresh_values_as_owner(oid) FROM PUBLIC;
CREATE FUNCTION keep_values_current(rel regclass, enabled boolean DEFAULT true)
    RETURNS void LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE distributed boolean := false;
BEGIN
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                    WHERE c.oid OPERATOR(pg_catalog.=) rel::pg_catalog.oid), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table % to keep its values current', rel USING ERRCODE = '42501';
    END IF;
    -- Citus takes no trigger on a table it distributes or replicates to every node.
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1
                   AND (p.partmethod OPERATOR(pg_catalog.<>) ''n'' OR p.repmodel OPERATOR(pg_catalog.=) ''t''
                        OR p.colocationid OPERATOR(pg_catalog.<>) 0))'
            INTO distributed USING rel;
    END IF;
    IF distributed THEN
        IF NOT enabled THEN
            RETURN;
        END IF;
        RAISE EXCEPTION '% is a Citus distributed or reference table: pg_ask cannot keep its values current with a trigger', rel
            USING ERRCODE = '0A000', HINT = 'Call ask.refresh_values() after writes, or from a scheduled job.';
    END IF;
    EXECUTE pg_catalog.format('DROP TRIGGER IF EXISTS ask_values_current ON %s', rel);
    IF enabled THEN
        EXECUTE pg_catalog.format('CREATE TRIGGER ask_values_current AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %s
                        FOR EACH STATEMENT EXECUTE FUNCTION ask._values_changed()', rel);
    END IF;
END $$;
COMMENT ON FUNCTION keep_values_current(regclass, boolean) IS
    'Opt in (or out) to refreshing a table''s value memory after every writing statement, as the table''s owner. Each refresh reads the indexed columns'' distinct values: meant for small, slowly changing tables.';
CREATE FUNCTION similar_values(rel regclass, col text, phrase text, k int DEFAULT 10)
    RETURNS TABLE (value text, score float8, method text) LANGUAGE sql VOLATILE PARALLEL UNSAFE
    BEGIN ATOMIC SELECT * FROM _similar_values(rel::oid, col, phrase, coalesce(k, 10)); END;
COMMENT ON FUNCTION similar_values(regclass, text, text, int) IS
    'What the value memory finds for a phrase in one column: embedding neighbours and trigram matches, with scores.';
