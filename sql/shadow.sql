-- Shadow tables: the row changes of tables under ask.shadow_enable(), replayed to the LLM.
-- The roles that enabled a table, replayed, loaded a workload or started a run are kept by OID
-- (regrole, shown by name): a renamed role keeps its rows, and a role created later with a
-- dropped role's name neither sees nor changes them.

CREATE TABLE shadow_tables (
    relid       oid PRIMARY KEY,
    key_columns text[] NOT NULL,
    -- The log holds every row of the table since it was empty (a snapshot was taken, the
    -- table was empty, or it was truncated since): replays may say so to the LLM.
    complete    boolean NOT NULL,
    enabled_at  timestamptz NOT NULL DEFAULT now(),
    enabled_by  regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))
);
COMMENT ON TABLE shadow_tables IS 'Tables whose row changes pg_ask captures (ask.shadow_enable).';

CREATE SEQUENCE shadow_log_seq;

-- Written by the capture trigger straight into the heap: no index on purpose (an index
-- would not be maintained); read in seq order.
CREATE TABLE shadow_log (
    seq     bigint NOT NULL,
    xid     bigint NOT NULL,
    relid   oid NOT NULL,
    op      "char" NOT NULL CHECK (op IN ('I', 'U', 'D')),
    old_row jsonb,
    new_row jsonb
);
COMMENT ON TABLE shadow_log IS 'Captured INSERT/UPDATE/DELETE row images of shadowed tables, in seq order.';

CREATE TABLE shadow_replays (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                timestamptz NOT NULL DEFAULT now(),
    role_name         regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    query             text NOT NULL,
    encoding          text NOT NULL,
    prompting         text NOT NULL,
    last_n            integer NOT NULL,
    commands          integer NOT NULL,
    model             text NOT NULL,
    llm_answer        jsonb,
    true_answer       jsonb NOT NULL,
    reply             text,
    score             float8 NOT NULL,
    prompt_tokens     bigint,
    completion_tokens bigint,
    ms                float8 NOT NULL
);
COMMENT ON TABLE shadow_replays IS 'Every ask.shadow_replay() call: the LLM''s answer, the real one and the score.';
ALTER TABLE shadow_replays ENABLE ROW LEVEL SECURITY;
CREATE POLICY shadow_replays_own ON shadow_replays USING (role_name = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)))
    WITH CHECK (role_name = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
GRANT SELECT, INSERT ON shadow_replays TO PUBLIC;

-- In-database benchmarks (InConDB workloads).
CREATE TABLE workloads (
    name       text PRIMARY KEY,
    spec       jsonb NOT NULL,
    nl         jsonb,
    statements integer NOT NULL,
    translated integer NOT NULL,
    skipped    integer NOT NULL,
    loaded_at  timestamptz NOT NULL DEFAULT now(),
    loaded_by  regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))
);
COMMENT ON TABLE workloads IS 'Benchmark workloads in InConDB''s JSON format (ask.load_workload).';

CREATE TABLE benchmark_runs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workload     text NOT NULL REFERENCES workloads(name) ON UPDATE CASCADE ON DELETE CASCADE,
    length       integer NOT NULL CHECK (length >= 0),
    insert_ratio float8 NOT NULL CHECK (insert_ratio BETWEEN 0 AND 1),
    overlap      float8 NOT NULL CHECK (overlap BETWEEN 0 AND 1),
    samples      integer NOT NULL CHECK (samples > 0),
    encodings    text[] NOT NULL,
    promptings   text[] NOT NULL,
    seed         integer NOT NULL,
    provider     text NOT NULL,
    model        text NOT NULL,
    base_url     text NOT NULL,
    status       text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'done')),
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    started_by   regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))
);
COMMENT ON TABLE benchmark_runs IS 'One CALL ask.benchmark(...) each; a CALL with the same parameters and model resumes an unfinished run.';

CREATE TABLE benchmark_samples (
    run_id            bigint NOT NULL REFERENCES benchmark_runs(id) ON DELETE CASCADE,
    sample            integer NOT NULL,
    encoding          text NOT NULL,
    prompting         text NOT NULL,
    operation         text NOT NULL,
    category          text,
    achieved_insert_ratio float8 NOT NULL,
    achieved_overlap  float8 NOT NULL,
    query             text NOT NULL,
    truth             jsonb NOT NULL,
    truth_class       text NOT NULL,
    reply             text,
    answer            jsonb,
    error             text,
    score             float8 NOT NULL,
    prompt_tokens     bigint,
    completion_tokens bigint,
    ms                float8 NOT NULL,
    done_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, sample, encoding, prompting)
);
COMMENT ON TABLE benchmark_samples IS 'One scored LLM answer per (sample, encoding, prompting) of a benchmark run.';

-- A run, its samples (whose truths hold what the role's own queries read) and its scores are
-- the role's: other roles do not see them (superusers do).
ALTER TABLE benchmark_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY benchmark_runs_own ON benchmark_runs FOR SELECT
    USING (started_by = pg_catalog.to_regrole(pg_catalog.quote_ident(session_user))
           OR started_by = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
ALTER TABLE benchmark_samples ENABLE ROW LEVEL SECURITY;
CREATE POLICY benchmark_samples_own ON benchmark_samples FOR SELECT
    USING (EXISTS (SELECT FROM ask.benchmark_runs r WHERE r.id = run_id));

SELECT pg_catalog.pg_extension_config_dump('shadow_tables', '');
SELECT pg_catalog.pg_extension_config_dump('shadow_log', '');
SELECT pg_catalog.pg_extension_config_dump('shadow_log_seq', '');
SELECT pg_catalog.pg_extension_config_dump('shadow_replays', '');
SELECT pg_catalog.pg_extension_config_dump('workloads', '');
SELECT pg_catalog.pg_extension_config_dump('benchmark_runs', '');
SELECT pg_catalog.pg_extension_config_dump('benchmark_samples', '');

REVOKE ALL ON shadow_tables, shadow_log, shadow_log_seq FROM PUBLIC;

-- Forget the log of a dropped table. It runs as the extension's owner (the role that drops the
-- table may not write the log), with the search path pinned and every operator and cast
-- qualified: nothing a role creates in a schema can stand in for them (CVE-2018-1058).
CREATE FUNCTION _shadow_forget_dropped() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM ask.shadow_log l USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0 AND l.relid OPERATOR(pg_catalog.=) d.objid;
    DELETE FROM ask.shadow_tables t USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
       AND d.objsubid OPERATOR(pg_catalog.=) 0 AND t.relid OPERATOR(pg_catalog.=) d.objid;
END $$;
REVOKE ALL ON FUNCTION _shadow_forget_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER ask_shadow_forget_dropped ON sql_drop EXECUTE FUNCTION _shadow_forget_dropped();
