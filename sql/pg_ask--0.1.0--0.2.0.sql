-- pg_ask 0.1.0 -> 0.2.0 (ALTER EXTENSION pg_ask UPDATE). Runs with the search path set to the
-- extension's schema, ask. What a fresh 0.2.0 install has and 0.1.0 had not:
\echo Use "ALTER EXTENSION pg_ask UPDATE TO '0.2.0'" to load this file. \quit

-- Evaluation results keep each question's pipeline trace (NULL for the rows of earlier runs).
ALTER TABLE eval_results ADD COLUMN trace jsonb;
COMMENT ON COLUMN eval_results.trace IS 'the question''s pipeline trace, as ask.explain() shows it: every LLM call with its reply and tokens, the guard''s and value correction''s decisions, executions';

-- The ledger keeps the role that made a call by OID (regrole, shown by name), so that a role
-- created later with a dropped role's name sees none of its rows. A row of a role that no
-- longer exists is left with OID 0 (shown as -), which no role is.
DROP POLICY llm_calls_own_read ON llm_calls;
DROP POLICY llm_calls_own_write ON llm_calls;
ALTER TABLE llm_calls ALTER COLUMN role DROP DEFAULT;
ALTER TABLE llm_calls ALTER COLUMN role TYPE regrole
    USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(role)), 0::pg_catalog.oid::pg_catalog.regrole);
ALTER TABLE llm_calls ALTER COLUMN role SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
CREATE POLICY llm_calls_own_read ON llm_calls FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
CREATE POLICY llm_calls_own_write ON llm_calls FOR INSERT WITH CHECK (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
COMMENT ON COLUMN llm_calls.role IS 'the role that made the call, by OID (shown by name): a role created later with a dropped role''s name sees none of its rows';

-- The evaluation tables, shadow replays, shadowed tables, workloads, benchmark runs and the
-- value memory's columns keep their role by OID too (as in sql/evaluate.sql, sql/shadow.sql and
-- sql/values.sql): a renamed role keeps its rows, and a role created later with a dropped
-- role's name neither sees nor extends them. A row of a role that no longer exists is left
-- with OID 0 (shown as -), which no role is; such a role's evaluation suite is renamed
-- <role>.<suite> (each quoted where it needs to be), as two dropped roles may have had suites
-- of one name. The policies, foreign keys and views over these columns are made again.
DROP VIEW eval_report, eval_summary, shadow_status;
DROP POLICY eval_suites_own ON eval_suites;
DROP POLICY eval_questions_own ON eval_questions;
DROP POLICY eval_runs_own ON eval_runs;
DROP POLICY eval_results_own ON eval_results;
ALTER TABLE eval_questions DROP CONSTRAINT eval_questions_owner_suite_fkey;
ALTER TABLE eval_runs DROP CONSTRAINT eval_runs_owner_suite_fkey;
ALTER TABLE eval_results DROP CONSTRAINT eval_results_owner_suite_run_label_fkey,
    DROP CONSTRAINT eval_results_owner_suite_qno_fkey;
DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['eval_suites', 'eval_questions', 'eval_runs', 'eval_results'] LOOP
        EXECUTE format('UPDATE %I SET suite = pg_catalog.quote_ident(owner) || ''.'' || pg_catalog.quote_ident(suite)
                         WHERE pg_catalog.to_regrole(pg_catalog.quote_ident(owner)) IS NULL', t);
        EXECUTE format('ALTER TABLE %I ALTER COLUMN owner DROP DEFAULT,
                            ALTER COLUMN owner TYPE regrole
                                USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(owner)), 0::pg_catalog.oid::pg_catalog.regrole),
                            ALTER COLUMN owner SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))', t);
        EXECUTE format('CREATE POLICY %I ON %I USING (owner = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))) WITH CHECK (owner = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)))', t || '_own', t);
    END LOOP;
END $$;
ALTER TABLE eval_questions ADD CONSTRAINT eval_questions_owner_suite_fkey
    FOREIGN KEY (owner, suite) REFERENCES eval_suites ON DELETE CASCADE;
ALTER TABLE eval_runs ADD CONSTRAINT eval_runs_owner_suite_fkey
    FOREIGN KEY (owner, suite) REFERENCES eval_suites ON DELETE CASCADE;
ALTER TABLE eval_results ADD CONSTRAINT eval_results_owner_suite_run_label_fkey
    FOREIGN KEY (owner, suite, run_label) REFERENCES eval_runs ON DELETE CASCADE;
ALTER TABLE eval_results ADD CONSTRAINT eval_results_owner_suite_qno_fkey
    FOREIGN KEY (owner, suite, qno) REFERENCES eval_questions ON DELETE CASCADE;
COMMENT ON COLUMN eval_suites.owner IS 'the role that loaded the suite, by OID (shown by name): a role created later with a dropped role''s name sees none of its suites and runs';

-- Per question, what the report views aggregate.
CREATE VIEW eval_report WITH (security_invoker = true) AS
WITH graded AS (
    SELECT r.owner, r.suite, r.run_label, g.grouped_by, g.grp, r.ex, r.outcome, r.tokens, r.ms
    FROM eval_results r
    JOIN eval_questions q USING (owner, suite, qno)
    CROSS JOIN LATERAL (VALUES ('category', q.category), ('difficulty', q.difficulty)) AS g(grouped_by, grp)
)
SELECT owner, suite, run_label, grouped_by, coalesce(grp, '(none)') AS "group",
       count(*) AS questions,
       count(*) FILTER (WHERE outcome = 'gold_failed') AS gold_failed,
       count(*) FILTER (WHERE outcome <> 'gold_failed') AS judged,
       count(*) FILTER (WHERE ex) AS correct,
       count(*) FILTER (WHERE outcome = 'prediction_error') AS errors,
       round(coalesce(count(*) FILTER (WHERE ex)::numeric
                      / nullif(count(*) FILTER (WHERE outcome <> 'gold_failed'), 0), 0), 4) AS ex,
       sum(tokens) AS tokens,
       round(avg(ms)::numeric, 1) AS ms_mean
FROM graded g
WHERE EXISTS (SELECT 1 FROM eval_questions q2
              WHERE q2.owner = g.owner AND q2.suite = g.suite
                AND CASE g.grouped_by WHEN 'category' THEN q2.category ELSE q2.difficulty END IS NOT NULL)
GROUP BY owner, suite, run_label, grouped_by, grp;
COMMENT ON VIEW eval_report IS 'Execution accuracy of each run by category and by difficulty (for suites that give them); EX = correct / judged, questions whose gold SQL could not run left out.';

-- Runs made before the knowledge layer existed offered none; a new run offers them by default.
ALTER TABLE eval_runs ADD COLUMN knowledge boolean NOT NULL DEFAULT false;
ALTER TABLE eval_runs ALTER COLUMN knowledge SET DEFAULT true;
COMMENT ON COLUMN eval_runs.knowledge IS 'whether the run offers the knowledge layer''s items, as ask() does (ask.use_knowledge when the run started): a run with it off measures the model without them';

CREATE VIEW eval_summary WITH (security_invoker = true) AS
SELECT u.owner, u.suite, u.run_label, u.provider, u.model, u.started_at, u.finished_at,
       s.questions,
       count(r.qno) AS evaluated,
       s.questions - count(r.qno) AS pending,
       count(*) FILTER (WHERE r.outcome = 'gold_failed') AS gold_failed,
       count(*) FILTER (WHERE r.outcome <> 'gold_failed') AS judged,
       count(*) FILTER (WHERE r.ex) AS correct,
       count(*) FILTER (WHERE r.outcome = 'prediction_error') AS errors,
       round(coalesce(count(*) FILTER (WHERE r.ex)::numeric
                      / nullif(count(*) FILTER (WHERE r.outcome <> 'gold_failed'), 0), 0), 4) AS ex,
       coalesce(sum(r.tokens), 0) AS tokens,
       round(avg(r.ms)::numeric, 1) AS ms_mean,
       round(coalesce(sum(r.ms), 0)::numeric, 1) AS ms_total,
       u.knowledge
FROM eval_runs u
JOIN eval_suites s USING (owner, suite)
LEFT JOIN eval_results r USING (owner, suite, run_label)
GROUP BY u.owner, u.suite, u.run_label, u.provider, u.model, u.started_at, u.finished_at, s.questions, u.knowledge;
COMMENT ON VIEW eval_summary IS 'One row per evaluation run: questions evaluated and pending, execution accuracy overall, tokens and milliseconds, and whether the run offered the knowledge layer''s items.';

GRANT SELECT ON eval_report, eval_summary TO PUBLIC;

DROP POLICY shadow_replays_own ON shadow_replays;
ALTER TABLE shadow_replays ALTER COLUMN role_name DROP DEFAULT,
    ALTER COLUMN role_name TYPE regrole
        USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(role_name)), 0::pg_catalog.oid::pg_catalog.regrole),
    ALTER COLUMN role_name SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
CREATE POLICY shadow_replays_own ON shadow_replays USING (role_name = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)))
    WITH CHECK (role_name = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
ALTER TABLE shadow_tables ALTER COLUMN enabled_by DROP DEFAULT,
    ALTER COLUMN enabled_by TYPE regrole
        USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(enabled_by)), 0::pg_catalog.oid::pg_catalog.regrole),
    ALTER COLUMN enabled_by SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
ALTER TABLE workloads ALTER COLUMN loaded_by DROP DEFAULT,
    ALTER COLUMN loaded_by TYPE regrole
        USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(loaded_by)), 0::pg_catalog.oid::pg_catalog.regrole),
    ALTER COLUMN loaded_by SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
ALTER TABLE benchmark_runs ALTER COLUMN started_by DROP DEFAULT,
    ALTER COLUMN started_by TYPE regrole
        USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(started_by)), 0::pg_catalog.oid::pg_catalog.regrole),
    ALTER COLUMN started_by SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
ALTER TABLE value_columns ALTER COLUMN indexed_by DROP DEFAULT,
    ALTER COLUMN indexed_by TYPE regrole
        USING coalesce(pg_catalog.to_regrole(pg_catalog.quote_ident(indexed_by)), 0::pg_catalog.oid::pg_catalog.regrole),
    ALTER COLUMN indexed_by SET DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user));
COMMENT ON COLUMN value_columns.indexed_by IS 'The role whose rights last read the values (the caller of ask.index_values or ask.refresh_values, or the table''s owner for a refresh it opted in to), by OID (shown by name).';

-- The ledger marks calls answered from the response cache.
ALTER TABLE llm_calls ADD COLUMN cached boolean NOT NULL DEFAULT false, ADD COLUMN tokens_saved integer;
-- Token counts are never negative (a role writes its own ledger rows; budgets sum them).
ALTER TABLE llm_calls ADD CONSTRAINT llm_calls_tokens_not_negative
    CHECK (prompt_tokens >= 0 AND completion_tokens >= 0 AND tokens_saved >= 0);
COMMENT ON COLUMN llm_calls.cached IS 'answered from the response cache (ask.cache) without a call: no tokens spent';
COMMENT ON COLUMN llm_calls.tokens_saved IS 'for a cached answer, the tokens the original call spent';

-- The response cache (ask.cache): as in sql/cache.sql.
CREATE TABLE llm_cache (
    role       regrole NOT NULL,
    key        bytea NOT NULL,
    provider   text NOT NULL,
    model      text NOT NULL,
    reply      jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (role, key)
);
COMMENT ON TABLE llm_cache IS 'Replies of LLM requests for ask.cache, per role (by OID) and keyed by the SHA-256 of the whole request (provider, base URL, body): a role is answered only from replies to its own requests. Read and written by pg_ask only.';
REVOKE ALL ON llm_cache FROM PUBLIC;

-- The ledger names the ask() call each LLM call was made for.
ALTER TABLE llm_calls ADD COLUMN call_id bigint;
COMMENT ON COLUMN llm_calls.call_id IS 'the ask() call the LLM call was made for (ask.questions.id, shown as call_id by ask.explain())';
CREATE INDEX llm_calls_call_id ON llm_calls (call_id);

-- Learning from users: the questions asked, verified queries, and the usage view: as in
-- sql/verified.sql.
-- One row per ask(), ask.sql(), ask.rows() or ask.explain() call, written in the caller's
-- transaction by pg_ask (as the extension's owner); each role reads its own.
CREATE TABLE questions (
    id           bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    asked_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    role         regrole NOT NULL,
    question     text NOT NULL,
    sql          text,
    source       text NOT NULL CHECK (source IN ('llm', 'verified', 'context', 'clarify', 'failed')),
    verified_id  bigint,
    feedback     boolean,
    feedback_sql text,
    feedback_at  timestamptz
);
COMMENT ON TABLE questions IS 'The questions asked through ask(), ask.sql(), ask.rows() and ask.explain(), with the SQL that answered them; id is the call id that ask.explain() shows and ask.feedback() takes. Each role sees its own rows.';
COMMENT ON COLUMN questions.source IS 'llm (generated SQL), verified (answered from a verified query without the LLM), context (answered from the given context), clarify (asked back), failed (ask.explain() of a run that failed)';
COMMENT ON COLUMN questions.role IS 'the role that asked, by OID (shown by name): a role created later with a dropped role''s name sees none of its rows';
COMMENT ON COLUMN questions.feedback IS 'ask.feedback(): true when the user marked the answer right, false when wrong';
CREATE INDEX questions_role_asked_at ON questions (role, asked_at);
ALTER TABLE questions ENABLE ROW LEVEL SECURITY;
CREATE POLICY questions_own ON questions FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON questions FROM PUBLIC;
GRANT SELECT ON questions TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('questions', '');

-- Verified queries. Written only through pg_ask's functions (as the extension's owner, after
-- the SQL was checked and run as the caller); a role sees and uses only the verified queries
-- all of whose tables it may SELECT.
CREATE TABLE verified_queries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    question        text NOT NULL CHECK (question <> ''),
    sql             text NOT NULL CHECK (sql <> ''),
    schema          name,
    tables          regclass[] NOT NULL,
    verified_by     name NOT NULL,
    verified_by_role regrole NOT NULL,
    verified_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    source          text NOT NULL CHECK (source IN ('manual', 'feedback', 'suite')),
    embedding       vector,
    embedding_model text
);
COMMENT ON TABLE verified_queries IS 'Question -> SQL pairs that users confirmed (ask.add_verified, ask.feedback, ask.verify_suite). ask() shows the most similar ones to the LLM as examples, and answers a question that is one of them (in other words, or with other values the value memory resolves) from its SQL without an LLM call. A role sees only those over tables it may SELECT.';
COMMENT ON COLUMN verified_queries.schema IS 'the schema the SQL was verified in: it runs with the search path set to this schema';
COMMENT ON COLUMN verified_queries.tables IS 'the relations the SQL reads (as written and as planned); a role must have SELECT on all of them, and USAGE on their schemas, to see or use the query';
COMMENT ON COLUMN verified_queries.verified_by IS 'the name of the role that verified it, when it did (for display: verified_by_role decides)';
COMMENT ON COLUMN verified_queries.verified_by_role IS 'the role that verified it, by OID: whose answers a caller takes and who may remove it; a role created later with a dropped verifier''s name is not its verifier';
COMMENT ON COLUMN verified_queries.source IS 'manual (ask.add_verified), feedback (ask.feedback), suite (ask.verify_suite)';
COMMENT ON COLUMN verified_queries.embedding IS 'the question''s embedding (ask.embedding_provider when it was added; NULL when off)';
CREATE INDEX verified_queries_question_trgm ON verified_queries USING gist (question gist_trgm_ops);
-- Whether the current role may read every relation of `tables` (SELECT on the table, USAGE on
-- its schema) with no row-level security policy hiding rows from it (a verified query's
-- literals may come from any row); a relation dropped since reads as unreadable, and a query
-- over none is no one's.
CREATE FUNCTION _verified_readable(tables regclass[]) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.cardinality(tables) OPERATOR(pg_catalog.>) 0
       AND NOT EXISTS (
           SELECT 1 FROM pg_catalog.unnest(tables) AS t(rel)
           WHERE NOT coalesce(pg_catalog.has_table_privilege(t.rel, 'SELECT')
                              AND pg_catalog.has_schema_privilege(
                                  (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.rel), 'USAGE')
                              AND NOT pg_catalog.row_security_active(t.rel::pg_catalog.oid),
                              false))
$$;
COMMENT ON FUNCTION _verified_readable(regclass[]) IS 'whether the current role may read every relation a verified query reads (the row-level security policy of ask.verified_queries)';
-- The verifier's OID, from the name pg_ask writes as the verifier (who exists: it is the role
-- verifying). Runs as the writer of the table, the extension's owner; search path pinned.
CREATE FUNCTION _verified_by_role() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.verified_by_role := pg_catalog.to_regrole(pg_catalog.quote_ident(NEW.verified_by));
    RETURN NEW;
END $$;
REVOKE ALL ON FUNCTION _verified_by_role() FROM PUBLIC;
CREATE TRIGGER verified_by_role BEFORE INSERT OR UPDATE OF verified_by ON verified_queries
    FOR EACH ROW EXECUTE FUNCTION _verified_by_role();
ALTER TABLE verified_queries ENABLE ROW LEVEL SECURITY;
CREATE POLICY verified_queries_readable ON verified_queries FOR SELECT USING (ask._verified_readable(tables));
REVOKE ALL ON verified_queries FROM PUBLIC;
GRANT SELECT ON verified_queries TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('verified_queries', '');

-- How often each role was answered from, or shown as an example, each verified query: one row
-- per query and role, so that no role learns from the counts what another asked. Written
-- only by pg_ask (as the extension's owner); each role reads its own rows (a superuser, all).
CREATE TABLE verified_uses (
    verified_id bigint NOT NULL REFERENCES verified_queries (id) ON DELETE CASCADE,
    role        regrole NOT NULL,
    uses        bigint NOT NULL DEFAULT 0,
    last_used   timestamptz,
    PRIMARY KEY (verified_id, role)
);
COMMENT ON TABLE verified_uses IS 'Times ask() answered a role from a verified query or showed it to the LLM as an example, per query and role (by OID); each role sees its own counts. Calls that found the row busy in another session''s open transaction are not counted.';
ALTER TABLE verified_uses ENABLE ROW LEVEL SECURITY;
CREATE POLICY verified_uses_own ON verified_uses FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON verified_uses FROM PUBLIC;
GRANT SELECT ON verified_uses TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('verified_uses', '');

-- Calls, tokens, cache hits and answers from verified queries per role and day.
CREATE VIEW usage WITH (security_invoker = true) AS
SELECT coalesce(l.role, q.role) AS role,
       coalesce(l.day, q.day) AS day,
       coalesce(l.calls, 0) AS calls,
       coalesce(l.tokens, 0) AS tokens,
       coalesce(l.cache_hits, 0) AS cache_hits,
       coalesce(l.tokens_saved, 0) AS tokens_saved,
       coalesce(l.failed_calls, 0) AS failed_calls,
       coalesce(q.verified_answers, 0) AS verified_answers
FROM (SELECT role,
             (called_at AT TIME ZONE 'UTC')::date AS day,
             count(*) FILTER (WHERE NOT cached) AS calls,
             coalesce(sum(coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0)), 0) AS tokens,
             count(*) FILTER (WHERE cached) AS cache_hits,
             coalesce(sum(tokens_saved), 0) AS tokens_saved,
             count(*) FILTER (WHERE outcome <> 'ok') AS failed_calls
      FROM llm_calls
      GROUP BY 1, 2) l
FULL JOIN (SELECT role, (asked_at AT TIME ZONE 'UTC')::date AS day, count(*) AS verified_answers
           FROM questions WHERE source = 'verified'
           GROUP BY 1, 2) q ON q.role = l.role AND q.day = l.day;
COMMENT ON VIEW usage IS 'LLM calls and tokens per role and day (UTC), cache hits and the tokens they saved, and questions answered from verified queries without an LLM call; ask.max_tokens_per_day counts the same tokens.';
GRANT SELECT ON usage TO PUBLIC;

-- The functions of verified queries and feedback (as pgrx generates them for a fresh install).
CREATE  FUNCTION "add_verified"(
	"question" TEXT, /* & str */
	"sql" TEXT, /* & str */
	"schema" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'add_verified_wrapper';

CREATE  FUNCTION "feedback"(
	"call_id" bigint, /* i64 */
	"correct" bool, /* bool */
	"sql" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS bigint /* Option < i64 > */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'feedback_wrapper';

CREATE  FUNCTION "remove_verified"(
	"id" bigint /* i64 */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'remove_verified_wrapper';

CREATE  FUNCTION "verify_suite"(
	"suite" TEXT /* & str */
) RETURNS INT /* i32 */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'verify_suite_wrapper';

-- The schema selection memory's embeddings are compared in the backend now (as in
-- sql/schema_memory.sql).
COMMENT ON COLUMN schema_memory_tables.embedding IS
    'The description''s embedding, any dimension (NULL: stored with embeddings off). A backend reads the embeddings of the caller''s candidates once, by key, and compares each question with them itself, so no vector index.';
-- The schema selection memory's version (as in sql/schema_memory.sql): moved on by every
-- statement that writes the memory, so that a backend re-checks its freshness only then.
CREATE TABLE schema_memory_version (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    version  bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE schema_memory_version IS 'One row: a number moved on by every write to the schema selection memory (a statement trigger on its two tables).';
INSERT INTO schema_memory_version DEFAULT VALUES;
CREATE FUNCTION _schema_memory_changed() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ask.schema_memory_version SET version = version OPERATOR(pg_catalog.+) 1;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _schema_memory_changed() FROM PUBLIC;
CREATE TRIGGER schema_memory_tables_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schema_memory_tables
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_changed();
CREATE TRIGGER schema_memory_schemas_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON schema_memory_schemas
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_changed();
REVOKE ALL ON schema_memory_version FROM PUBLIC;

-- A failure kind the ledger records since 0.2.0.
COMMENT ON COLUMN llm_calls.outcome IS 'ok, or the failure kind: connect_error, timeout, rate_limited, context_overflow, http_error, malformed, truncated, empty';

-- ask.api_key is only safe from other roles when the library is preloaded.
DO $$
BEGIN
    IF pg_catalog.current_setting('shared_preload_libraries') !~ '(^|[\s,"/])pg_ask($|[\s,"])' THEN
        RAISE NOTICE 'pg_ask is not in shared_preload_libraries: ask.api_key will be refused until it is'
            USING DETAIL = 'Until pg_ask is loaded in a session, PostgreSQL keeps ask.api_key as a placeholder setting that any role can read. A local LLM server without a key needs nothing more.',
                  HINT = 'ALTER SYSTEM SET shared_preload_libraries = ''pg_ask'' (keep the libraries already listed there) and restart PostgreSQL before setting ask.api_key.';
    END IF;
END $$;

-- The privilege model (SECURITY.md). The trigger of ask.keep_values_current() and the event
-- triggers run as the extension's owner with the search path pinned; the owner's refresh is not
-- PUBLIC's to call; the shadow log and the value memory are not shown past row-level security;
-- benchmark runs are their role's.
CREATE OR REPLACE FUNCTION _values_changed() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM ask._refresh_values_as_owner(TG_RELID);
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _refresh_values_as_owner(oid) FROM PUBLIC;
CREATE OR REPLACE FUNCTION keep_values_current(rel regclass, enabled boolean DEFAULT true)
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
CREATE OR REPLACE FUNCTION _shadow_forget_dropped() RETURNS event_trigger LANGUAGE plpgsql
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
CREATE OR REPLACE FUNCTION _comment_changed() RETURNS event_trigger LANGUAGE plpgsql
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
CREATE OR REPLACE VIEW shadow_commands WITH (security_barrier) AS
SELECT l.seq,
       l.xid,
       l.relid::regclass AS rel,
       CASE l.op WHEN 'I' THEN 'INSERT' WHEN 'U' THEN 'UPDATE' ELSE 'DELETE' END AS operation,
       ask.shadow_command(l.relid::regclass, l.op, l.old_row, l.new_row, 'sql') AS command,
       ask.shadow_command(l.relid::regclass, l.op, l.old_row, l.new_row, 'nl') AS sentence,
       l.old_row,
       l.new_row
  FROM ask.shadow_log l
 WHERE pg_catalog.has_table_privilege(l.relid, 'SELECT') AND NOT pg_catalog.row_security_active(l.relid);
CREATE VIEW shadow_status WITH (security_barrier) AS
SELECT t.relid::regclass AS rel, t.key_columns, t.complete, t.enabled_at, t.enabled_by,
       (SELECT count(*) FROM ask.shadow_log l WHERE l.relid = t.relid) AS entries
  FROM ask.shadow_tables t
 WHERE pg_catalog.has_table_privilege(t.relid, 'SELECT') AND NOT pg_catalog.row_security_active(t.relid);
COMMENT ON VIEW shadow_status IS 'Shadowed tables and the size of their captured log.';
GRANT SELECT ON shadow_status TO PUBLIC;
ALTER TABLE benchmark_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY benchmark_runs_own ON benchmark_runs FOR SELECT
    USING (started_by = pg_catalog.to_regrole(pg_catalog.quote_ident(session_user))
           OR started_by = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
ALTER TABLE benchmark_samples ENABLE ROW LEVEL SECURITY;
CREATE POLICY benchmark_samples_own ON benchmark_samples FOR SELECT
    USING (EXISTS (SELECT FROM ask.benchmark_runs r WHERE r.id = run_id));
ALTER VIEW benchmark_results SET (security_invoker = true);
ALTER VIEW benchmark_progress SET (security_invoker = true);
ALTER VIEW benchmark_table1 SET (security_invoker = true);
ALTER VIEW benchmark_table2 SET (security_invoker = true);
ALTER VIEW benchmark_by_parameter SET (security_invoker = true);

-- Conversations (as in sql/conversations.sql) and the functions that keep them; ask(),
-- ask.sql(), ask.rows() and ask.explain() take conversation => id (as pgrx generates them).
-- Conversations: a question asked with ask(question, conversation => id) is read in the light
-- of the conversation's earlier turns. Written only by pg_ask (as the extension's owner, in
-- the caller's transaction); each role reads its own.
CREATE TABLE conversations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    role        regrole NOT NULL,
    title       text,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    ended_at    timestamptz
);
COMMENT ON TABLE conversations IS 'Conversations started with ask.conversation_start(); ask(), ask.sql(), ask.rows() and ask.explain() take the id as conversation => id. Each role sees its own.';
COMMENT ON COLUMN conversations.last_at IS 'When the last turn was asked (ask.conversation_purge() forgets conversations by it)';
COMMENT ON COLUMN conversations.ended_at IS 'Set by ask.conversation_end(): an ended conversation takes no more turns';
CREATE INDEX conversations_role_last_at ON conversations (role, last_at);
ALTER TABLE conversations ENABLE ROW LEVEL SECURITY;
CREATE POLICY conversations_own ON conversations FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON conversations FROM PUBLIC;
GRANT SELECT ON conversations TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('conversations', '');

CREATE TABLE conversation_turns (
    conversation_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn            int NOT NULL,
    role            regrole NOT NULL,
    asked_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    question        text NOT NULL,
    standalone      text NOT NULL,
    reading         text NOT NULL CHECK (reading IN ('standalone', 'rewritten')),
    sql             text,
    columns         text[],
    row_count       bigint,
    call_id         bigint,
    PRIMARY KEY (conversation_id, turn)
);
COMMENT ON TABLE conversation_turns IS 'The turns of each conversation: the question as asked, as it was answered (standalone), how it was read, the SQL that ran and the shape of its result; call_id is what ask.feedback() takes. Each role sees its own.';
COMMENT ON COLUMN conversation_turns.standalone IS 'The question as answered: a follow-up rewritten into a standalone question, or the question itself';
COMMENT ON COLUMN conversation_turns.reading IS 'standalone (answered as asked) or rewritten (a follow-up of the turn before, rewritten and its SQL shown to generation to edit)';
ALTER TABLE conversation_turns ENABLE ROW LEVEL SECURITY;
CREATE POLICY conversation_turns_own ON conversation_turns FOR SELECT USING (role = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)));
REVOKE ALL ON conversation_turns FROM PUBLIC;
GRANT SELECT ON conversation_turns TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('conversation_turns', '');

-- The tables the current role may read, with their descriptions: what a client (an agent's
-- tool, an IDE) shows before asking. Runs as the caller: its privileges decide. Objects of
-- extensions and of pg_ask itself are left out, as ask() leaves them out.
CREATE FUNCTION tables() RETURNS TABLE (schema_name name, table_name name, description text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT n.nspname, c.relname, pg_catalog.obj_description(c.oid, 'pg_class')
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])
       AND NOT c.relispartition
       AND n.nspname OPERATOR(pg_catalog.<>) ALL ('{pg_catalog,information_schema,ask}'::pg_catalog.name[])
       AND n.nspname OPERATOR(pg_catalog.!~) '^pg_(toast|temp_)'
       AND pg_catalog.has_schema_privilege(n.oid, 'USAGE')
       AND pg_catalog.has_any_column_privilege(c.oid, 'SELECT')
       AND NOT EXISTS (
           SELECT FROM pg_catalog.pg_depend d
            WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
              AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e')
     ORDER BY 1, 2
$$;
COMMENT ON FUNCTION tables() IS 'The tables, views, materialized views and foreign tables the current role may read (SELECT on the table or one of its columns, USAGE on its schema), with their comments; those of extensions and of pg_ask are left out.';

DROP FUNCTION public."ask"(text, text, text, text, double precision, int, text);
DROP FUNCTION "explain"(text, text, text, text, double precision, int, text);
DROP FUNCTION "rows"(text, text, text, text, double precision, int);
DROP FUNCTION "sql"(text, text, text, text, double precision, int);

CREATE  FUNCTION "conversation_end"(
	"conversation" bigint /* i64 */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'conversation_end_wrapper';

CREATE  FUNCTION "conversation_forget"(
	"conversation" bigint /* i64 */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'conversation_forget_wrapper';

CREATE  FUNCTION "conversation_purge"(
	"older_than" interval DEFAULT '30 days', /* pgrx :: datum :: Interval */
	"all_roles" bool DEFAULT false /* bool */
) RETURNS bigint /* i64 */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'conversation_purge_wrapper';

CREATE  FUNCTION "conversation_start"(
	"title" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'conversation_start_wrapper';

CREATE  FUNCTION "explain"(
	"question" TEXT, /* & str */
	"model" TEXT DEFAULT NULL, /* Option < & str > */
	"provider" TEXT DEFAULT NULL, /* Option < & str > */
	"base_url" TEXT DEFAULT NULL, /* Option < & str > */
	"temperature" double precision DEFAULT NULL, /* Option < f64 > */
	"max_attempts" INT DEFAULT NULL, /* Option < i32 > */
	"context" TEXT DEFAULT NULL, /* Option < & str > */
	"conversation" bigint DEFAULT NULL /* Option < i64 > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ask_explain_with_conversation_wrapper';

CREATE  FUNCTION "query"(
	"sql" TEXT /* & str */
) RETURNS SETOF jsonb /* JsonB */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'query_wrapper';

CREATE  FUNCTION "rows"(
	"question" TEXT, /* & str */
	"model" TEXT DEFAULT NULL, /* Option < & str > */
	"provider" TEXT DEFAULT NULL, /* Option < & str > */
	"base_url" TEXT DEFAULT NULL, /* Option < & str > */
	"temperature" double precision DEFAULT NULL, /* Option < f64 > */
	"max_attempts" INT DEFAULT NULL, /* Option < i32 > */
	"conversation" bigint DEFAULT NULL /* Option < i64 > */
) RETURNS SETOF jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ask_rows_with_conversation_wrapper';

CREATE  FUNCTION "sql"(
	"question" TEXT, /* & str */
	"model" TEXT DEFAULT NULL, /* Option < & str > */
	"provider" TEXT DEFAULT NULL, /* Option < & str > */
	"base_url" TEXT DEFAULT NULL, /* Option < & str > */
	"temperature" double precision DEFAULT NULL, /* Option < f64 > */
	"max_attempts" INT DEFAULT NULL, /* Option < i32 > */
	"conversation" bigint DEFAULT NULL /* Option < i64 > */
) RETURNS TEXT /* String */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ask_sql_with_conversation_wrapper';

CREATE  FUNCTION public."ask"(
	"question" TEXT, /* & str */
	"model" TEXT DEFAULT NULL, /* Option < & str > */
	"provider" TEXT DEFAULT NULL, /* Option < & str > */
	"base_url" TEXT DEFAULT NULL, /* Option < & str > */
	"temperature" double precision DEFAULT NULL, /* Option < f64 > */
	"max_attempts" INT DEFAULT NULL, /* Option < i32 > */
	"context" TEXT DEFAULT NULL, /* Option < & str > */
	"conversation" bigint DEFAULT NULL /* Option < i64 > */
) RETURNS TEXT /* String */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'ask_answer_with_conversation_wrapper';

-- The schema selection memory's lexical index (as in sql/schema_memory.sql and
-- sql/schema_memory_index.sql). Tables described before it have no words in it: until
-- ask.index_schema() describes them again, selection reads the whole catalog, as 0.1.0 did.
ALTER TABLE schema_memory_tables ADD COLUMN field_lengths int4[];
COMMENT ON COLUMN schema_memory_tables.field_lengths IS
    'The length in words of each field of the table''s words (schema, table, column, comment, value names; values are not stored): its part of the lexical index in ask.schema_memory_terms. NULL: stored before the lexical index existed.';
-- The schema selection memory's lexical index: the words of each described table's names and
-- comments (never its values: those are scored live, for the tables a role may read), so that
-- a question reads only the tables that share a word with it instead of the whole catalog.
-- Names and comments are what pg_catalog shows every role; the counts below tell a role
-- nothing more.
CREATE TABLE schema_memory_terms (
    term  text NOT NULL,
    relid oid NOT NULL REFERENCES schema_memory_tables (relid) ON DELETE CASCADE,
    tf    int4[] NOT NULL,
    PRIMARY KEY (term, relid)
);
CREATE INDEX schema_memory_terms_relid ON schema_memory_terms (relid);
COMMENT ON TABLE schema_memory_terms IS 'The lexical index of the schema selection memory: a row per word and table, from its names and comments.';
COMMENT ON COLUMN schema_memory_terms.tf IS 'The word''s occurrences in each field: schema name, table name, column names, comments, values (always 0).';

-- Each word's document frequency, kept by statement triggers on schema_memory_terms.
CREATE TABLE schema_memory_vocabulary (
    term    text PRIMARY KEY,
    df      int4 NOT NULL,
    name_df int4 NOT NULL
);
COMMENT ON TABLE schema_memory_vocabulary IS 'The words of the lexical index: in how many tables each occurs (df), of which in a name (name_df).';

-- Relations that DDL created or changed in an indexed schema since the memory last described
-- them, with their owner and their words (names and comments) as the DDL left them: a question
-- from the lexical index takes as candidates only those that share a word with it (one role's
-- DDL adds nothing to the work of other roles' questions), describes them live, and one that
-- may write describes them in the memory again and forgets them here.
CREATE TABLE schema_memory_dirty (
    relid oid PRIMARY KEY,
    owner oid NOT NULL,
    words text[] NOT NULL
);
-- A question reads the notes that share a word with it, never the whole list (fastupdate off:
-- no pending list for every reader to scan).
CREATE INDEX schema_memory_dirty_words ON schema_memory_dirty USING gin (words) WITH (fastupdate = off);
CREATE INDEX schema_memory_dirty_owner ON schema_memory_dirty (owner);
COMMENT ON TABLE schema_memory_dirty IS 'Relations of indexed schemas changed by DDL since the schema selection memory described them (an event trigger), with their owner and words; at most 100 per owner.';

REVOKE ALL ON schema_memory_terms, schema_memory_vocabulary, schema_memory_dirty FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('schema_memory_terms', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_vocabulary', '');
SELECT pg_catalog.pg_extension_config_dump('schema_memory_dirty', '');

CREATE FUNCTION _schema_memory_terms_added() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    INSERT INTO ask.schema_memory_vocabulary (term, df, name_df)
    SELECT DISTINCT a.term, 0, 0 FROM added a
     WHERE NOT EXISTS (SELECT 1 FROM ask.schema_memory_vocabulary v WHERE v.term OPERATOR(pg_catalog.=) a.term);
    UPDATE ask.schema_memory_vocabulary v SET df = v.df OPERATOR(pg_catalog.+) a.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM added o GROUP BY o.term) a
     WHERE v.term OPERATOR(pg_catalog.=) a.term;
    UPDATE ask.schema_memory_vocabulary v SET name_df = v.name_df OPERATOR(pg_catalog.+) a.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM added o
             WHERE o.tf[1] OPERATOR(pg_catalog.>) 0 OR o.tf[2] OPERATOR(pg_catalog.>) 0 OR o.tf[3] OPERATOR(pg_catalog.>) 0
             GROUP BY o.term) a
     WHERE v.term OPERATOR(pg_catalog.=) a.term;
    RETURN NULL;
END $$;
CREATE FUNCTION _schema_memory_terms_removed() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    UPDATE ask.schema_memory_vocabulary v SET df = v.df OPERATOR(pg_catalog.-) r.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM removed o GROUP BY o.term) r
     WHERE v.term OPERATOR(pg_catalog.=) r.term;
    UPDATE ask.schema_memory_vocabulary v SET name_df = v.name_df OPERATOR(pg_catalog.-) r.n
      FROM (SELECT o.term, pg_catalog.count(*)::pg_catalog.int4 AS n FROM removed o
             WHERE o.tf[1] OPERATOR(pg_catalog.>) 0 OR o.tf[2] OPERATOR(pg_catalog.>) 0 OR o.tf[3] OPERATOR(pg_catalog.>) 0
             GROUP BY o.term) r
     WHERE v.term OPERATOR(pg_catalog.=) r.term;
    DELETE FROM ask.schema_memory_vocabulary v
     WHERE v.df OPERATOR(pg_catalog.<=) 0 AND v.term OPERATOR(pg_catalog.=) ANY (ARRAY(SELECT o.term FROM removed o));
    RETURN NULL;
END $$;
CREATE FUNCTION _schema_memory_terms_truncated() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    TRUNCATE ask.schema_memory_vocabulary;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION _schema_memory_terms_added(), _schema_memory_terms_removed(), _schema_memory_terms_truncated() FROM PUBLIC;
CREATE TRIGGER schema_memory_terms_added AFTER INSERT ON schema_memory_terms
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_added();
CREATE TRIGGER schema_memory_terms_removed AFTER DELETE ON schema_memory_terms
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_removed();
CREATE TRIGGER schema_memory_terms_truncated AFTER TRUNCATE ON schema_memory_terms
    FOR EACH STATEMENT EXECUTE FUNCTION _schema_memory_terms_truncated();

-- Mark the relations a DDL command created or changed (a schema's: all of its relations) when
-- they are in a schema the memory describes. It runs as the extension's owner (the role
-- running the DDL may not write the memory), with the search path pinned and every operator
-- qualified, skips temporary objects and partitions (never described), and never fails the
-- command: on any error it warns and the memory is refreshed by ask.index_schema() or by the
-- full comparison of a backend that reads its whole catalog. A note keeps the relation's words
-- split and lower-cased as the lexical index's are (plural -s taken off as well), for the
-- questions' look-up; each owner has at most 100 notes (the DDL of one role cannot grow the
-- list without bound: ask.index_schema() describes the relations past it). The words of a
-- relation noted already are replaced.
CREATE FUNCTION _schema_memory_touched() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    WITH touched AS (
        SELECT DISTINCT c.oid, c.relowner
          FROM pg_catalog.pg_event_trigger_ddl_commands() d
          JOIN pg_catalog.pg_class c
            ON (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                AND c.oid OPERATOR(pg_catalog.=) d.objid)
            OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
                AND c.relnamespace OPERATOR(pg_catalog.=) d.objid)
         WHERE NOT d.in_extension
           AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p,v,m,f}'::pg_catalog."char"[])
           AND c.relpersistence OPERATOR(pg_catalog.<>) 't'
           AND NOT c.relispartition
           AND EXISTS (SELECT 1 FROM ask.schema_memory_schemas s WHERE s.nspid OPERATOR(pg_catalog.=) c.relnamespace)),
    ranked AS (
        SELECT t.oid, t.relowner,
               EXISTS (SELECT 1 FROM ask.schema_memory_dirty o WHERE o.relid OPERATOR(pg_catalog.=) t.oid) AS noted,
               pg_catalog.row_number() OVER (PARTITION BY t.relowner ORDER BY t.oid) AS n
          FROM touched t)
    INSERT INTO ask.schema_memory_dirty (relid, owner, words)
    SELECT r.oid, r.relowner, ARRAY(
             SELECT DISTINCT pg_catalog.unnest(ARRAY[w, CASE
                    WHEN pg_catalog.length(w) OPERATOR(pg_catalog.<=) 3 OR w OPERATOR(pg_catalog.~) '[^[:alpha:]]' THEN w
                    WHEN w OPERATOR(pg_catalog.~) '^.{2,}ies$' THEN pg_catalog.regexp_replace(w, 'ies$', 'y')
                    WHEN w OPERATOR(pg_catalog.~) '(sses|xes|ches|shes)$' THEN pg_catalog.regexp_replace(w, 'es$', '')
                    WHEN w OPERATOR(pg_catalog.~) '[^uis]s$' THEN pg_catalog.regexp_replace(w, 's$', '')
                    ELSE w END])
               FROM pg_catalog.regexp_split_to_table(pg_catalog.lower(
                        pg_catalog.regexp_replace(pg_catalog.regexp_replace(pg_catalog.regexp_replace(
                            pg_catalog.concat_ws(' ', n.nspname, c.relname,
                                (SELECT pg_catalog.string_agg(a.attname::pg_catalog.text, ' ') FROM pg_catalog.pg_attribute a
                                  WHERE a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped),
                                (SELECT pg_catalog.string_agg(e.description, ' ') FROM pg_catalog.pg_description e
                                  WHERE e.objoid OPERATOR(pg_catalog.=) c.oid
                                    AND e.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid)),
                            '([[:lower:]])([[:upper:]])', '\1 \2', 'g'),
                            '([[:alpha:]])([[:digit:]])', '\1 \2', 'g'),
                            '([[:digit:]])([[:alpha:]])', '\1 \2', 'g')),
                    '[^[:alnum:]]+') AS w
              WHERE w OPERATOR(pg_catalog.<>) '')
      FROM ranked r
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) r.oid
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE r.noted
        OR r.n OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM ask.schema_memory_dirty o
                                        WHERE o.owner OPERATOR(pg_catalog.=) r.relowner) OPERATOR(pg_catalog.<=) 100
    ON CONFLICT ON CONSTRAINT schema_memory_dirty_pkey DO UPDATE SET words = EXCLUDED.words;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pg_ask: could not note a change for the schema selection memory: %', SQLERRM
        USING HINT = 'ask.index_schema() describes the changed tables again.';
END $$;
REVOKE ALL ON FUNCTION _schema_memory_touched() FROM PUBLIC;
CREATE EVENT TRIGGER ask_schema_memory_touched ON ddl_command_end EXECUTE FUNCTION _schema_memory_touched();

-- The tables nearest to a question by embedding are read through an HNSW index of the
-- embeddings of one dimension, cast to it (the column takes any dimension): here 384, that of
-- all-MiniLM-L6-v2, the local embedder; ask.index_schema() gives other dimensions theirs.
CREATE INDEX IF NOT EXISTS schema_memory_tables_hnsw_384 ON ask.schema_memory_tables
    USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops) WHERE vector_dims(embedding) = 384;

-- The knowledge layer (new in 0.2.0): its table, then its functions.
-- Knowledge the database's owners teach pg_ask once (ask.add_instruction, ask.add_metric,
-- ask.add_filter, ask.add_dimension, ask.add_synonym, ask.import_knowledge): written only
-- through those functions, as the extension's owner, after the item was checked as its author;
-- a role sees and is offered only the items over what it may read.

CREATE TABLE knowledge (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind          text NOT NULL CHECK (kind IN ('instruction', 'metric', 'filter', 'dimension', 'synonym')),
    name          text CHECK (name <> ''),
    about         regclass,
    about_schema  regnamespace,
    column_name   name,
    value         text,
    body          text NOT NULL DEFAULT '',
    description   text,
    synonyms      text[] NOT NULL DEFAULT '{}',
    tables        regclass[] NOT NULL DEFAULT '{}',
    created_by    regrole NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    checked_at    timestamptz,
    checked_shape text,
    problem       text,
    first_word    text GENERATED ALWAYS AS (lower(split_part(name, ' ', 1))) STORED,
    CHECK (kind = 'instruction' OR about IS NOT NULL),
    CHECK (about IS NULL OR about_schema IS NULL),
    CHECK ((kind IN ('instruction')) = (name IS NULL)),
    CHECK (kind = 'synonym' OR (column_name IS NULL AND value IS NULL)),
    CHECK (value IS NULL OR column_name IS NOT NULL),
    CHECK (kind = 'synonym' OR body <> '')
);
COMMENT ON TABLE knowledge IS 'What the database''s owners taught pg_ask: instructions (on the database, a schema or a table), metrics, filters and dimensions (named SQL expressions over a table) and synonyms (of a table, a column or a value). ask() offers those relevant to a question in the SQL prompt and writes a named metric, filter or dimension into the SQL as its checked expression. A role sees only the items over relations it may read.';
COMMENT ON COLUMN knowledge.about IS 'the table the item is about (NULL: an instruction on the database or on about_schema)';
COMMENT ON COLUMN knowledge.body IS 'an instruction''s text; a metric''s or dimension''s expression; a filter''s predicate';
COMMENT ON COLUMN knowledge.tables IS 'every relation the item reads, as checked: a role must have SELECT on all of them, and USAGE on their schemas, to see or be offered it';
COMMENT ON COLUMN knowledge.created_by IS 'the role that wrote the item, by OID';
COMMENT ON COLUMN knowledge.checked_shape IS 'the columns of the item''s relations when it was last checked: when they differ, the item is checked again before it is used';
COMMENT ON COLUMN knowledge.first_word IS 'the first word of the name, lower case: a question''s table synonyms are looked up by it (a plain equality, which row-level security lets an index answer)';
COMMENT ON COLUMN knowledge.problem IS 'why the last check failed (NULL: it passed); an item with a problem is not used';
-- One item per kind, subject and name (an instruction: per text): adding it again replaces it.
CREATE UNIQUE INDEX knowledge_identity ON knowledge
    (kind, coalesce(about::oid, 0::oid), coalesce(about_schema::oid, 0::oid), lower(coalesce(name, body)),
     coalesce(column_name, ''), coalesce(value, ''));
CREATE INDEX knowledge_about ON knowledge (about);
-- A question's table synonyms are looked up by their first word (ask() and ask.select_tables()).
CREATE INDEX knowledge_synonym_words ON knowledge (first_word) WHERE kind = 'synonym' AND column_name IS NULL;

-- Whether the current role may see an item: an instruction on the database, any role; on a
-- schema, a role with USAGE on it; any other, a role with SELECT on every relation it reads
-- and USAGE on their schemas, and for a value's synonym no row-level security policy hiding
-- rows from it (the value may come from any row). A relation dropped since reads as
-- unreadable.
CREATE FUNCTION _knowledge_visible(about regclass, about_schema regnamespace, tables regclass[], value text)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN about IS NULL AND about_schema IS NULL THEN true
        WHEN about IS NULL THEN coalesce(pg_catalog.has_schema_privilege(about_schema::pg_catalog.oid, 'USAGE'), false)
        ELSE NOT EXISTS (
            SELECT 1 FROM pg_catalog.unnest(pg_catalog.array_append(tables, about)) AS t(rel)
            WHERE NOT coalesce(pg_catalog.has_table_privilege(t.rel, 'SELECT')
                               AND pg_catalog.has_schema_privilege(
                                   (SELECT c.relnamespace FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) t.rel), 'USAGE')
                               AND (value IS NULL OR NOT pg_catalog.row_security_active(t.rel::pg_catalog.oid)),
                               false))
    END
$$;
COMMENT ON FUNCTION _knowledge_visible(regclass, regnamespace, regclass[], text) IS 'whether the current role may see a knowledge item (the row-level security policy of ask.knowledge)';

-- The columns of `tables` as they stand (names and types, in order); a dropped relation
-- counts as none. An item whose shape changed is checked again before it is used.
CREATE FUNCTION _knowledge_shape(tables regclass[]) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_catalog.md5(coalesce(pg_catalog.string_agg(
               a.attrelid::pg_catalog.text OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.attname::pg_catalog.text
               OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.atttypid::pg_catalog.text, ','
               ORDER BY a.attrelid, a.attnum), '')
           OPERATOR(pg_catalog.||) '/' OPERATOR(pg_catalog.||)
           (SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) ANY (tables::pg_catalog.oid[]))::pg_catalog.text)
    FROM pg_catalog.pg_attribute a
    WHERE a.attrelid OPERATOR(pg_catalog.=) ANY (tables::pg_catalog.oid[]) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
$$;
COMMENT ON FUNCTION _knowledge_shape(regclass[]) IS 'the columns of a knowledge item''s relations, to tell when it must be checked again';

ALTER TABLE knowledge ENABLE ROW LEVEL SECURITY;
CREATE POLICY knowledge_visible ON knowledge FOR SELECT
    USING (ask._knowledge_visible(about, about_schema, tables, value));
REVOKE ALL ON knowledge FROM PUBLIC;
GRANT SELECT ON knowledge TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('knowledge', '');

-- Items about a dropped table or schema go with it (a table created later under the same name
-- is another table, with none).
CREATE FUNCTION _knowledge_forget_dropped() RETURNS event_trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM ask.knowledge k USING pg_catalog.pg_event_trigger_dropped_objects() d
     WHERE d.objsubid OPERATOR(pg_catalog.=) 0
       AND ((d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
             AND k.about::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid)
         OR (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::pg_catalog.regclass::pg_catalog.oid
             AND k.about_schema::pg_catalog.oid OPERATOR(pg_catalog.=) d.objid));
END $$;
REVOKE ALL ON FUNCTION _knowledge_forget_dropped() FROM PUBLIC;
CREATE EVENT TRIGGER ask_knowledge_forget_dropped ON sql_drop EXECUTE FUNCTION _knowledge_forget_dropped();

CREATE  FUNCTION "_add_knowledge"(
	"kind" TEXT, /* & str */
	"name" TEXT, /* Option < & str > */
	"about" oid, /* Option < pg_sys :: Oid > */
	"about_schema" TEXT, /* Option < & str > */
	"column_name" TEXT, /* Option < & str > */
	"value" TEXT, /* Option < & str > */
	"body" TEXT, /* Option < & str > */
	"description" TEXT, /* Option < & str > */
	"synonyms" TEXT[] /* :: std :: option :: Option < Vec < Option < String > > > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'add_knowledge_wrapper';

CREATE  FUNCTION "check_knowledge"() RETURNS TABLE (
	"id" bigint,  /* i64 */
	"kind" TEXT,  /* String */
	"name" TEXT,  /* Option < String > */
	"problem" TEXT  /* Option < String > */
)
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'check_knowledge_wrapper';

CREATE  FUNCTION "export_knowledge"(
	"in_schema" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS jsonb /* pgrx :: JsonB */
STABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'export_knowledge_wrapper';

CREATE  FUNCTION "import_knowledge"(
	"document" jsonb /* pgrx :: JsonB */
) RETURNS INT /* i32 */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'import_knowledge_wrapper';

CREATE  FUNCTION "remove_knowledge"(
	"id" bigint /* i64 */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'remove_knowledge_wrapper';

-- The knowledge layer's functions with their named arguments (ask._add_knowledge does the
-- work, as the caller; see src/knowledge). Each returns the item's id in ask.knowledge; adding
-- an item of the same kind, subject and name again replaces it.
CREATE FUNCTION add_instruction(instruction text, about regclass DEFAULT NULL, about_schema name DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('instruction', NULL, about::oid, about_schema::text, NULL, NULL, instruction, NULL, NULL);
COMMENT ON FUNCTION add_instruction(text, regclass, name) IS
    'Teach pg_ask an instruction about the database (no table or schema: its owner or a superuser), a schema (its owner) or a table (its owner), such as ''amounts are in cents''. ask() shows it to the model for questions over that table, schema or database.';
CREATE FUNCTION add_metric(name text, about regclass, expression text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('metric', name, about::oid, NULL, NULL, NULL, expression, description, synonyms);
COMMENT ON FUNCTION add_metric(text, regclass, text, text, text[]) IS
    'Teach pg_ask a metric: a named aggregate expression over a table (revenue: sum(amount_cents) / 100.0). Checked as generated SQL is, as the table''s owner; ask() offers it for questions that name it (or a synonym) and writes it into the SQL when the model names it.';
CREATE FUNCTION add_filter(name text, about regclass, predicate text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('filter', name, about::oid, NULL, NULL, NULL, predicate, description, synonyms);
COMMENT ON FUNCTION add_filter(text, regclass, text, text, text[]) IS
    'Teach pg_ask a filter: a named predicate over a table (open: closed_on IS NULL). Checked as generated SQL is, as the table''s owner; written into the SQL when the model names it.';
CREATE FUNCTION add_dimension(name text, about regclass, expression text, description text DEFAULT NULL, synonyms text[] DEFAULT '{}')
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('dimension', name, about::oid, NULL, NULL, NULL, expression, description, synonyms);
COMMENT ON FUNCTION add_dimension(text, regclass, text, text, text[]) IS
    'Teach pg_ask a dimension: a named expression over a table''s rows (order month: date_trunc(''month'', ordered_at)). Checked as generated SQL is, as the table''s owner; written into the SQL when the model names it.';
CREATE FUNCTION add_synonym(synonym text, about regclass, column_name name DEFAULT NULL, value text DEFAULT NULL)
    RETURNS bigint LANGUAGE sql VOLATILE PARALLEL UNSAFE
    RETURN _add_knowledge('synonym', synonym, about::oid, NULL, column_name::text, value, NULL, NULL, NULL);
COMMENT ON FUNCTION add_synonym(text, regclass, name, text) IS
    'Teach pg_ask another word for a table (clients: customers), one of its columns, or a value of a column (Big Apple: ''New York''). The table''s owner only; a value''s synonym needs the value in the column.';
CREATE  FUNCTION "explain_sql"(
	"sql" TEXT /* & str */
) RETURNS TEXT /* String */
STRICT STABLE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'explain_sql_wrapper';

CREATE  FUNCTION "suggest_questions"(
	"n" INT DEFAULT 5 /* i32 */
) RETURNS TABLE (
	"question" TEXT,  /* String */
	"verified_id" bigint,  /* i64 */
	"tables" TEXT[]  /* Vec < String > */
)
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'suggest_questions_wrapper';

CREATE  FUNCTION "chart"(
	"sql" TEXT, /* Option < & str > */
	"title" TEXT DEFAULT NULL /* Option < & str > */
) RETURNS TEXT /* Option < String > */
VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'chart_wrapper';

-- Which knowledge items each run offered, and which the right and wrong answers used.
CREATE VIEW eval_knowledge WITH (security_invoker = true) AS
SELECT r.owner, r.suite, r.run_label, i.item, k.kind, coalesce(k.name, pg_catalog.left(k.body, 60)) AS name,
       count(*) FILTER (WHERE i.offered) AS offered,
       count(*) FILTER (WHERE i.used) AS used,
       count(*) FILTER (WHERE i.used AND r.ex) AS used_right,
       count(*) FILTER (WHERE i.used AND NOT r.ex AND r.outcome <> 'gold_failed') AS used_wrong,
       count(*) FILTER (WHERE i.offered AND NOT i.used AND r.ex) AS unused_right,
       count(*) FILTER (WHERE i.offered AND NOT i.used AND NOT r.ex AND r.outcome <> 'gold_failed') AS unused_wrong
FROM eval_results r
CROSS JOIN LATERAL (
    SELECT DISTINCT e.id::bigint AS item,
           coalesce(r.trace -> 'knowledge_offered', '[]'::jsonb) @> pg_catalog.to_jsonb(e.id::bigint) AS offered,
           coalesce(r.trace -> 'knowledge_used', '[]'::jsonb) @> pg_catalog.to_jsonb(e.id::bigint) AS used
    FROM pg_catalog.jsonb_array_elements_text(coalesce(r.trace -> 'knowledge_offered', '[]'::jsonb)
                                              || coalesce(r.trace -> 'knowledge_used', '[]'::jsonb)) AS e(id)
) i
LEFT JOIN knowledge k ON k.id = i.item
GROUP BY r.owner, r.suite, r.run_label, i.item, k.kind, k.name, k.body;
COMMENT ON VIEW eval_knowledge IS 'Per evaluation run and knowledge item: how many questions were offered it, how many answers used it, and of those how many were right and wrong (questions whose gold SQL could not run left out of wrong); an item the caller may no longer see is listed by id alone.';
GRANT SELECT ON eval_knowledge TO PUBLIC;
