CREATE FUNCTION _comment_changed() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.classid, c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c
             WHERE c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                OR c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid LOOP
        PERFORM ask._invalidate_relation(CASE WHEN r.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                                              THEN r.objid
                                              ELSE 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid END);
    END LOOP;
END $$;
REVOKE ALL ON FUNCTION _comment_changed() FROM PUBLIC;
REVOKE ALL ON FUNCTION _invalidate_relation(oid) FROM PUBLIC;
CREATE EVENT TRIGGER ask_comment_changed ON ddl_command_end WHEN TAG IN ('COMMENT')
    EXECUTE FUNCTION _comment_changed();
