-- Text-to-SQL evaluation on the user's own schema: suites of questions with gold SQL
-- (ask.load_suite) and runs of them through ask.sql() (CALL ask.evaluate). Each role owns its
-- suites and runs and sees only its own rows (row-level security, as for ask.llm_calls);
-- superusers see all. The owner is kept by OID (regrole, shown by name): a renamed role keeps its
-- suites, and a role created later with a dropped role's name neither sees nor extends them.

CREATE TABLE eval_suites (
    owner      regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    suite      text NOT NULL CHECK (suite <> ''),
    questions  integer NOT NULL,
    loaded_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner, suite)
);
COMMENT ON TABLE eval_suites IS 'Evaluation suites loaded with ask.load_suite(name, rows), one per owner and name.';
COMMENT ON COLUMN eval_suites.owner IS 'the role that loaded the suite, by OID (shown by name): a role created later with a dropped role''s name sees none of its suites and runs';

CREATE TABLE eval_questions (
    owner        regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    suite        text NOT NULL,
    qno          integer NOT NULL,
    question     text NOT NULL,
    gold_sql     text NOT NULL,
    schema       text,
    category     text,
    difficulty   text,
    instructions text,
    PRIMARY KEY (owner, suite, qno),
    FOREIGN KEY (owner, suite) REFERENCES eval_suites ON DELETE CASCADE
);
COMMENT ON TABLE eval_questions IS 'The questions of a suite, numbered from 1 in the order given, with their gold SQL.';
COMMENT ON COLUMN eval_questions.gold_sql IS 'as given: {a.x, a.y} column choices and ;-separated alternatives are expanded when judging';
COMMENT ON COLUMN eval_questions.schema IS 'the schema the question is about: only its tables are described, and the SQL runs with search_path set to it';

CREATE TABLE eval_runs (
    owner       regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    suite       text NOT NULL,
    run_label   text NOT NULL CHECK (run_label <> ''),
    provider    text NOT NULL,
    model       text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    knowledge   boolean NOT NULL DEFAULT true,
    PRIMARY KEY (owner, suite, run_label),
    FOREIGN KEY (owner, suite) REFERENCES eval_suites ON DELETE CASCADE
);
COMMENT ON TABLE eval_runs IS 'Runs of a suite (CALL ask.evaluate(suite, run_label)); a run is finished when every question has a result.';
COMMENT ON COLUMN eval_runs.knowledge IS 'whether the run offers the knowledge layer''s items, as ask() does (ask.use_knowledge when the run started): a run with it off measures the model without them';

CREATE TABLE eval_results (
    owner               regrole NOT NULL DEFAULT pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)),
    suite               text NOT NULL,
    run_label           text NOT NULL,
    qno                 integer NOT NULL,
    predicted_sql       text,
    ex                  boolean NOT NULL,
    outcome             text NOT NULL CHECK (outcome IN ('correct', 'wrong_result', 'prediction_error', 'gold_failed')),
    error               text,
    matched_alternative integer,
    attempts            integer NOT NULL,
    llm_calls           integer NOT NULL,
    tokens              bigint NOT NULL,
    ms                  double precision NOT NULL,
    judge_ms            double precision NOT NULL,
    evaluated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    trace               jsonb,
    PRIMARY KEY (owner, suite, run_label, qno),
    FOREIGN KEY (owner, suite, run_label) REFERENCES eval_runs ON DELETE CASCADE,
    FOREIGN KEY (owner, suite, qno) REFERENCES eval_questions ON DELETE CASCADE
);
COMMENT ON TABLE eval_results IS 'One row per question of a run: the SQL ask.sql() produced, whether it returned a gold result (EX), tokens and milliseconds.';
COMMENT ON COLUMN eval_results.outcome IS 'correct, wrong_result, prediction_error (no SQL, refused, failed), gold_failed (no gold query could run: left out of EX)';
COMMENT ON COLUMN eval_results.trace IS 'the question''s pipeline trace, as ask.explain() shows it: every LLM call with its reply and tokens, the guard''s and value correction''s decisions, executions';
COMMENT ON COLUMN eval_results.matched_alternative IS '1-based number of the gold alternative the prediction matched';
COMMENT ON COLUMN eval_results.ms IS 'milliseconds to produce the prediction, its LLM calls included';
COMMENT ON COLUMN eval_results.judge_ms IS 'milliseconds to run the prediction and the gold SQL and compare them';

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['eval_suites', 'eval_questions', 'eval_runs', 'eval_results'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY %I ON %I USING (owner = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user))) WITH CHECK (owner = pg_catalog.to_regrole(pg_catalog.quote_ident(current_user)))', t || '_own', t);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO PUBLIC', t);
        PERFORM pg_catalog.pg_extension_config_dump(t, '');
    END LOOP;
END $$;

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

-- The run itself: batches of questions, each committed, so that a cancelled run keeps what it
-- finished and the same CALL resumes it. (A procedure that commits cannot have a SET clause;
-- every name is schema-qualified instead.)
CREATE PROCEDURE evaluate(suite text, run_label text)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM ask._evaluate_begin(suite, run_label);
    COMMIT;
    WHILE ask.evaluate_step(suite, run_label) > 0 LOOP
        COMMIT;
    END LOOP;
    COMMIT;
END $$;
COMMENT ON PROCEDURE evaluate(text, text) IS 'Runs every question of a suite through ask.sql(), judges the prediction against the gold SQL (execution accuracy), and records the results in ask.eval_results, committing after each batch of ask.concurrency questions; CALL it again with the same run_label to resume.';
