//! In-backend tests of ask.load_suite() and the evaluation step behind CALL ask.evaluate(), on
//! defog's databases and questions read from ../shared/datasets/defog, with a stand-in LLM
//! scripted to return the gold SQL for some questions and wrong SQL for others, so that the
//! execution accuracy to measure is known in advance. (The procedure itself commits, which a
//! test transaction cannot: tests/client/tests/evaluate.rs runs the CALL.)

#[pgrx::pg_schema]
mod tests {
    use std::collections::BTreeMap;

    use llm_standin::{Reply, Rule, Script, StandIn};
    use pgrx::pg_sys::panic::CaughtError;
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::Value;

    use pg_ask_core::evaluate::{parse_suite_rows, SuiteQuestion};

    use crate::pg::subxact::{self, OnSuccess};
    use crate::pg::testing::{closed_url, error_of, llm, one};

    const DEFOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/defog");
    const DATABASES: [&str; 3] = ["restaurants", "academic", "scholar"];
    const WRONG_SQL: &str = "SELECT 'no such answer' AS wrong";

    /// The defog database `db` in a schema of its name (its file creates tables in public).
    fn load_database(db: &str) {
        let path = format!("{DEFOG}/{db}.sql");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Spi::run(&format!("CREATE SCHEMA {db}")).unwrap();
        Spi::run(&text.replace("public.", &format!("{db}."))).unwrap();
    }

    /// The defog questions of `dbs`, in file order, as the JSON rows ask.load_suite() takes.
    fn defog_rows(dbs: &[&str]) -> Value {
        let csv = std::fs::canonicalize(format!("{DEFOG}/questions_gen_postgres.csv")).unwrap();
        Spi::run(&format!(
            "CREATE TEMP TABLE defog_questions (n serial, question text, query text, db_name text,
                 query_category text, instructions text);
             COPY defog_questions (question, query, db_name, query_category, instructions)
                 FROM '{}' (FORMAT csv, HEADER true)",
            csv.display()
        ))
        .unwrap();
        let list = dbs.iter().map(|d| format!("'{d}'")).collect::<Vec<_>>().join(", ");
        let JsonB(rows) =
            one::<JsonB>(&format!("SELECT jsonb_agg(to_jsonb(q) - 'n' ORDER BY n) FROM defog_questions q WHERE db_name IN ({list})"));
        rows
    }

    /// What the stand-in does for one question.
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Plan {
        /// Answers the gold SQL (its first alternative).
        Gold,
        /// Answers SQL that runs and returns something else.
        Wrong,
        /// First a query on a table that does not exist, then the gold SQL after the error.
        RepairedToGold,
        /// Never any SQL.
        NoSql,
    }

    fn plan_for(qno: usize) -> Plan {
        match qno {
            2 => Plan::RepairedToGold,
            3 => Plan::NoSql,
            n if n % 4 == 0 => Plan::Wrong,
            _ => Plan::Gold,
        }
    }

    fn script_for(questions: &[SuiteQuestion]) -> Script {
        let mut script = Script::default();
        for (i, q) in questions.iter().enumerate() {
            let key = format!("<question>{}</question>", q.prompt_text());
            let gold = q.gold_alternatives[0].clone();
            script = match plan_for(i + 1) {
                Plan::Gold => script.rule(Rule::new(&[&key], Reply::text(format!("```sql\n{gold}\n```")))),
                Plan::Wrong => script.rule(Rule::new(&[&key], Reply::text(WRONG_SQL))),
                Plan::RepairedToGold => script
                    .rule(Rule::new(&[&key], Reply::text(gold)).last(&["does not exist"]))
                    .rule(Rule::new(&[&key], Reply::text("SELECT count(*) FROM no_such_table")).times(1)),
                Plan::NoSql => script.rule(Rule::new(&[&key], Reply::text("I cannot answer that."))),
            };
        }
        script
    }

    fn defog_suite() -> Vec<SuiteQuestion> {
        for db in DATABASES {
            load_database(db);
        }
        let rows = defog_rows(&DATABASES);
        let n: i32 = Spi::get_one_with_args::<i32>("SELECT ask.load_suite('defog', $1)", &[JsonB(rows.clone()).into()]).unwrap().unwrap();
        let questions = parse_suite_rows(&rows).unwrap();
        assert_eq!(n as usize, questions.len());
        assert_eq!(n, 75, "25 questions for each of the three databases");
        questions
    }

    /// One step of batch `batch`; a failure names the requests the stand-in saw.
    fn step(s: &StandIn, run: &str, batch: i32) -> i32 {
        let sql = format!("SELECT ask.evaluate_step('defog', '{run}', {batch})");
        match subxact::run(OnSuccess::Release, move || Spi::get_one::<i32>(&sql).unwrap().unwrap()) {
            Ok(n) => n,
            Err(CaughtError::PostgresError(r)) | Err(CaughtError::ErrorReport(r)) => {
                let seen: Vec<String> =
                    s.requests().iter().map(|q| q.prompt.chars().rev().take(160).collect::<String>().chars().rev().collect()).collect();
                panic!("step failed: {}\nrequests seen ({}):\n{}", r.message(), seen.len(), seen.join("\n---\n"))
            }
            Err(e @ CaughtError::RustPanic { .. }) => e.rethrow(),
        }
    }

    #[pg_test]
    fn defog_run_measures_the_scripted_execution_accuracy_and_resumes() {
        let questions = defog_suite();
        let s = llm(script_for(&questions));
        let n = questions.len();
        // The stand-in runs inside this backend: one call at a time here (concurrent calls are
        // exercised against a stand-in process by tests/client/tests/evaluate.rs).
        // Repairs as edits, which show the error the scripted repair answers (`auto` asks a
        // missing relation afresh).
        Spi::run("SET ask.concurrency = 1; SET ask.request_timeout = '10s'; SET ask.first_repair = edit").unwrap();

        // A run cut short after one batch keeps that batch; the next steps do only the rest.
        assert_eq!(step(&s, "scripted", 5), 5);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results WHERE run_label = 'scripted'"), 5);
        let mut steps = 0;
        loop {
            let done = step(&s, "scripted", 8);
            if done == 0 {
                break;
            }
            assert!(done <= 8, "a batch has at most the questions asked for");
            steps += 1;
        }
        assert_eq!(steps, (n - 5).div_ceil(8));
        assert_eq!(step(&s, "scripted", 8), 0, "nothing left");

        // Known in advance: which questions get the gold SQL.
        let plans: Vec<Plan> = (1..=n).map(plan_for).collect();
        let correct = plans.iter().filter(|p| matches!(p, Plan::Gold | Plan::RepairedToGold)).count();
        let wrong = plans.iter().filter(|p| **p == Plan::Wrong).count();
        assert_eq!((correct, wrong), (56, 18));
        let outcomes: BTreeMap<String, i64> = Spi::connect(|c| {
            c.select("SELECT outcome, count(*) FROM ask.eval_results WHERE run_label = 'scripted' GROUP BY 1", None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<i64>(2).unwrap().unwrap()))
                .collect()
        });
        let expected: BTreeMap<String, i64> = [("correct", correct as i64), ("prediction_error", 1), ("wrong_result", wrong as i64)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(outcomes, expected, "every gold query of these three databases runs");

        let (judged, right, ex): (i64, i64, pgrx::AnyNumeric) = Spi::get_three(
            "SELECT judged, correct, ex FROM ask.eval_summary WHERE suite = 'defog' AND run_label = 'scripted' AND pending = 0 AND finished_at IS NOT NULL",
        )
        .map(|(a, b, c)| (a.unwrap(), b.unwrap(), c.unwrap()))
        .unwrap();
        assert_eq!((judged, right), (75, 56));
        assert_eq!(ex.to_string(), "0.7467", "EX = 56/75");

        // Each question's first call went out once (prefetched), plus the live repairs: one for
        // the repaired question, two for the one that never gives SQL (its second reply repeats
        // the first, so the same request is asked once more under the SQL grammar, the last of
        // ask.max_attempts = 3), and two for each wrong query that left out a value its
        // question quotes (asked again as an edit, then afresh when the edit writes it again).
        let quoting = (1..=n)
            .filter(|&i| {
                plan_for(i) == Plan::Wrong && !pg_ask_core::ask::quoted::ignored(&questions[i - 1].prompt_text(), WRONG_SQL).is_empty()
            })
            .count();
        assert_eq!(quoting, 4, "the 20th and 24th (academic), 68th and 72nd (scholar) quote a value");
        let requests = s.requests();
        assert_eq!(requests.len(), n + 1 + 2 + 2 * quoting);
        let calls: BTreeMap<String, i64> = Spi::connect(|c| {
            c.select("SELECT stage, count(*) FROM ask.llm_calls WHERE outcome = 'ok' GROUP BY 1", None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<i64>(2).unwrap().unwrap()))
                .collect()
        });
        assert_eq!(calls.get("generate"), Some(&(n as i64)));
        assert_eq!(calls.get("repair"), Some(&(3 + 2 * quoting as i64)));
        // The prompt described only the question's own schema.
        let first = &requests.iter().find(|r| r.prompt.contains(&questions[0].question)).unwrap().prompt;
        assert!(first.contains("TABLE academic.author") && !first.contains("restaurants.") && !first.contains("scholar."), "{first}");

        let repaired = Spi::get_three::<bool, i32, i32>(
            "SELECT ex, attempts, llm_calls FROM ask.eval_results WHERE run_label = 'scripted' AND qno = 2",
        )
        .unwrap();
        assert_eq!(repaired, (Some(true), Some(2), Some(2)));
        let (error, tokens) =
            Spi::get_two::<String, i64>("SELECT error, tokens FROM ask.eval_results WHERE run_label = 'scripted' AND qno = 3").unwrap();
        assert!(error.unwrap().contains("no SQL"));
        assert!(tokens.unwrap() > 0);
        let wrong_error: String = one("SELECT error FROM ask.eval_results WHERE run_label = 'scripted' AND qno = 4");
        assert!(wrong_error.starts_with("wrong result"), "{wrong_error}");
        let bad: i64 = one("SELECT count(*) FROM ask.eval_results WHERE run_label = 'scripted'
             AND (ms <= 0 OR tokens <= 0 OR judge_ms <= 0 OR (ex AND matched_alternative IS NULL))");
        assert_eq!(bad, 0);

        // The report by category: exactly the scripted counts per category.
        let mut per_category: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (q, plan) in questions.iter().zip(&plans) {
            let e = per_category.entry(q.category.clone().unwrap()).or_default();
            e.0 += 1;
            e.1 += i64::from(matches!(plan, Plan::Gold | Plan::RepairedToGold));
        }
        let report: BTreeMap<String, (i64, i64)> = Spi::connect(|c| {
            c.select(
                "SELECT \"group\", questions, correct FROM ask.eval_report WHERE run_label = 'scripted' AND grouped_by = 'category'",
                None,
                &[],
            )
            .unwrap()
            .map(|r| (r.get::<String>(1).unwrap().unwrap(), (r.get::<i64>(2).unwrap().unwrap(), r.get::<i64>(3).unwrap().unwrap())))
            .collect()
        });
        assert_eq!(report, per_category);
        assert_eq!(report.len(), 5);
        // defog gives no difficulty: no such rows.
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_report WHERE grouped_by = 'difficulty'"), 0);
    }

    #[pg_test]
    fn load_suite_refuses_malformed_rows_clearly() {
        let cases: [(&str, &str); 6] = [
            (r#"{"question": "q", "gold_sql": "SELECT 1"}"#, "must be a JSON array"),
            ("[]", "has no rows"),
            (r#"[{"question": "q", "gold_sql": "SELECT 1"}, 7]"#, "row 2: not a JSON object"),
            (r#"[{"question": "q", "gold_sql": "SELECT 1"}, {"question": "  ", "query": "SELECT 2"}]"#, "row 2: no \"question\""),
            (r#"[{"question": "q"}]"#, "row 1: no \"gold_sql\""),
            (r#"[{"question": "q", "gold_sql": "SELECT {a.x, a.y FROM a"}]"#, "row 1: unbalanced braces"),
        ];
        for (rows, needle) in cases {
            let (code, msg, hint) = error_of(&format!("SELECT ask.load_suite('bad', $${rows}$$)"));
            assert_eq!(code, "22023", "{rows}: {msg}");
            assert!(msg.contains(needle) && msg.contains("suite \"bad\""), "{rows}: {msg}");
            assert!(hint.is_some());
        }
        let (code, _, _) = error_of(r#"SELECT ask.load_suite('', '[{"question": "q", "gold_sql": "SELECT 1"}]')"#);
        assert_eq!(code, "22023");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_suites"), 0);

        // A good suite: optional fields by their dataset names, defog's brace choices kept as given.
        let n: i32 = one(r#"SELECT ask.load_suite('mini', '[
                {"question": "how many?", "query": "SELECT count(*) FROM t", "db_id": "s1", "hardness": "easy"},
                {"nl": "names", "gold": "SELECT {t.a, t.b} FROM t", "query_category": "select", "instructions": "use t"}]')"#);
        assert_eq!(n, 2);
        let row = Spi::get_three::<String, String, String>(
            "SELECT schema, difficulty, gold_sql FROM ask.eval_questions WHERE suite = 'mini' AND qno = 1",
        )
        .unwrap();
        assert_eq!(row, (Some("s1".into()), Some("easy".into()), Some("SELECT count(*) FROM t".into())));
        let row = Spi::get_two::<String, String>("SELECT category, instructions FROM ask.eval_questions WHERE suite = 'mini' AND qno = 2")
            .unwrap();
        assert_eq!(row, (Some("select".into()), Some("use t".into())));
        // Loading it again replaces it, runs included.
        Spi::run("INSERT INTO ask.eval_runs (suite, run_label, provider, model) VALUES ('mini', 'r', 'openai', 'm')").unwrap();
        let n: i32 = one(r#"SELECT ask.load_suite('mini', '[{"question": "q", "gold_sql": "SELECT 1"}]')"#);
        assert_eq!(n, 1);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_questions WHERE suite = 'mini'"), 1);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_runs"), 0);
    }

    #[pg_test]
    fn suites_and_results_belong_to_their_role_and_run_with_its_privileges() {
        Spi::run(
            "CREATE SCHEMA shop; CREATE TABLE shop.fruits (name text); INSERT INTO shop.fruits VALUES ('cherry'), ('plum');
                  CREATE TABLE shop.secrets (payroll int); INSERT INTO shop.secrets VALUES (1);",
        )
        .unwrap();
        Spi::run(
            "CREATE ROLE ask_eval_a; CREATE ROLE ask_eval_b;
                  GRANT USAGE ON SCHEMA shop TO ask_eval_a, ask_eval_b; GRANT SELECT ON shop.fruits TO ask_eval_a, ask_eval_b",
        )
        .unwrap();
        let _s = llm(Script::default()
            .rule(Rule::new(&["<question>fruit names in reverse order</question>"], Reply::text("SELECT name FROM fruits")))
            .rule(Rule::new(&["<question>fruit names</question>"], Reply::text("SELECT name FROM fruits")))
            .rule(Rule::new(&["<question>payroll</question>"], Reply::text("SELECT payroll FROM secrets"))));
        Spi::run("SET ROLE ask_eval_a").unwrap();
        let rows = r#"[{"question": "fruit names in reverse order", "gold_sql": "SELECT name FROM fruits ORDER BY name DESC", "schema": "shop"},
                       {"question": "payroll", "gold_sql": "SELECT payroll FROM secrets", "schema": "shop"},
                       {"question": "fruit names", "gold_sql": "SELECT name FROM fruits ORDER BY name DESC", "schema": "shop"}]"#;
        Spi::run(&format!("SELECT ask.load_suite('mine', '{rows}')")).unwrap();
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('mine', 'r1', 3)"), 3);
        let outcomes: Vec<(i32, String, bool)> = Spi::connect(|c| {
            c.select("SELECT qno, outcome, ex FROM ask.eval_results ORDER BY qno", None, &[])
                .unwrap()
                .map(|r| (r.get::<i32>(1).unwrap().unwrap(), r.get::<String>(2).unwrap().unwrap(), r.get::<bool>(3).unwrap().unwrap()))
                .collect()
        });
        // Unordered prediction against an ordering gold, for a question that asks for an
        // order: the rows are right, the order is not (plum, cherry); the secret table is
        // unreadable for both prediction and gold; the same prediction and gold for a question
        // that asks for no order are the same rows, whatever their order.
        assert_eq!(outcomes[0].1, "wrong_result", "{outcomes:?}");
        assert_eq!(outcomes[1].1, "gold_failed", "{outcomes:?}");
        assert_eq!(outcomes[2].1, "correct", "{outcomes:?}");
        let error: String = one("SELECT error FROM ask.eval_results WHERE qno = 1");
        assert!(error.contains("another order"), "{error}");
        let error: String = one("SELECT error FROM ask.eval_results WHERE qno = 2");
        assert!(error.contains("permission denied"), "{error}");
        // The summary leaves the question whose gold cannot run out of the accuracy.
        let (judged, gold_failed, ex): (i64, i64, pgrx::AnyNumeric) =
            Spi::get_three("SELECT judged, gold_failed, ex FROM ask.eval_summary")
                .map(|(j, g, e)| (j.unwrap(), g.unwrap(), e.unwrap()))
                .unwrap();
        assert_eq!((judged, gold_failed, ex.to_string()), (2, 1, "0.5000".to_string()));

        // Another role sees none of it, and cannot run it.
        Spi::run("RESET ROLE; SET ROLE ask_eval_b").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_suites"), 0);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results"), 0);
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_summary"), 0);
        let (code, msg, hint) = error_of("SELECT ask.evaluate_step('mine', 'r1')");
        assert_eq!(code, "42704", "{msg}");
        assert!(hint.unwrap().contains("ask.load_suite"));
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn an_unreachable_llm_stops_the_run_instead_of_failing_questions() {
        Spi::run("CREATE SCHEMA shop; CREATE TABLE shop.fruits (name text)").unwrap();
        Spi::run(r#"SELECT ask.load_suite('s', '[{"question": "fruits", "gold_sql": "SELECT name FROM fruits", "schema": "shop"}]')"#)
            .unwrap();
        let closed = closed_url();
        Spi::run(&format!("SET ask.base_url = '{closed}/v1'")).unwrap();
        let (code, msg, _) = error_of("SELECT ask.evaluate_step('s', 'r')");
        assert_eq!(code, "08001", "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results"), 0);
        let (code, _, hint) = error_of("SELECT ask.evaluate_step('s', 'r', 0)");
        assert_eq!(code, "22023");
        assert!(hint.unwrap().contains("ask.concurrency"));
        // A server that answers, but not in its protocol, stops the run too: that body is
        // not the model's answer.
        let s = llm(Script::default().or_else(Reply::Malformed));
        let (code, msg, _) = error_of("SELECT ask.evaluate_step('s', 'r')");
        assert_eq!(code, "08P01", "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM ask.eval_results"), 0);
        // An empty reply is the model's: the question is judged, as a prediction error.
        s.set_script(Script::default().or_else(Reply::Empty));
        assert_eq!(one::<i32>("SELECT ask.evaluate_step('s', 'r')"), 1);
        assert_eq!(one::<String>("SELECT outcome FROM ask.eval_results"), "prediction_error");
    }
}
