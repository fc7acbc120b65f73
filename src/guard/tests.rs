//! In-backend tests of guarded execution: the database layer refuses what the parse-level
//! guard lets through, and the hostile corpus changes nothing.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::Script;
    use pgrx::prelude::*;

    use serde_json::Value;

    use crate::pg::subxact::{self, OnSuccess};
    use crate::pg::testing::*;

    #[pg_test]
    fn a_volatile_function_is_refused_by_the_database_layer() {
        setup();
        Spi::run(
            "CREATE TABLE public.canary_log (id int, note text);
                  CREATE FUNCTION public.canary_bump() RETURNS int LANGUAGE sql VOLATILE
                  AS $$ INSERT INTO public.canary_log VALUES (1, 'bumped') RETURNING 1 $$;",
        )
        .unwrap();
        let s = llm(Script::reply_always("SELECT public.canary_bump()"));
        // A user's function is on no list: the allow-list refuses it first.
        let (code, msg, _) = error_of("SELECT ask.sql('bump it')");
        assert_eq!(code, "2F003", "{msg}");
        assert!(msg.contains("public.canary_bump") && msg.contains("ask.allowed_functions"), "{msg}");
        // The refusal went back to the LLM once; its repair wrote the refused statement again,
        // so the same request went once more under the SQL grammar (ask.sql_grammar = auto),
        // whose reply (the stand-in ignores grammars) ends the call.
        assert_eq!(s.requests().len(), 3, "one repair, the repeat asked again under the grammar");
        assert!(s.requests()[2].body.get("grammar").is_some());
        // Listed by a superuser, it is still volatile: the database layer refuses it.
        Spi::run("SET ask.allowed_functions = 'public.canary_bump'").unwrap();
        let (code, msg, _) = error_of("SELECT ask.sql('bump it')");
        assert_eq!(code, "2F003", "{msg}");
        assert!(msg.contains("volatile"), "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.canary_log"), 0);
    }

    /// Declared volatility is not a boundary: a user's function declared STABLE that takes an
    /// advisory lock (which would outlive the rolled-back subtransaction and tell other
    /// sessions what it read) is refused unless a superuser lists it, and a listed one is refused
    /// as its lock's call is about to start; built-in functions, operators and aggregates run; a
    /// built-in that runs SQL given as text is refused.
    #[pg_test]
    fn only_functions_on_the_allow_list_run() {
        setup();
        Spi::run(
            "CREATE TABLE public.lock_secret (id int, secret text);
             INSERT INTO public.lock_secret VALUES (1, 'lockme');
             CREATE FUNCTION public.leaky(t text) RETURNS boolean LANGUAGE plpgsql STABLE
                 AS $$ BEGIN PERFORM pg_advisory_lock(hashtext(t)); RETURN true; END $$;
             CREATE FUNCTION public.leaky_eq(text, text) RETURNS boolean LANGUAGE plpgsql STABLE
                 AS $$ BEGIN PERFORM pg_advisory_lock(hashtext($1)); RETURN $1 = $2; END $$;
             CREATE OPERATOR public.=== (LEFTARG = text, RIGHTARG = text, FUNCTION = public.leaky_eq);",
        )
        .unwrap();
        let locks = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()";
        let s = llm(Script::default());
        Spi::run("SET ask.max_attempts = 1").unwrap();
        for (reply, why) in [
            ("SELECT id FROM public.lock_secret WHERE public.leaky(secret)", "a STABLE user function"),
            ("SELECT id FROM public.lock_secret WHERE secret OPERATOR(public.===) 'x'", "an operator backed by one"),
            ("SELECT query_to_xml('SELECT pg_advisory_lock(1)', true, false, '')", "a built-in that runs SQL text"),
        ] {
            s.set_script(Script::reply_always(reply));
            let (code, msg, _) = error_of("SELECT ask.sql('which rows?')");
            assert_eq!(code, "2F003", "{why}: {msg}");
            assert_eq!(one::<i64>(locks), 0, "{why} took an advisory lock");
        }
        s.set_script(Script::reply_always("SELECT count(*), max(upper(secret)) FROM public.lock_secret WHERE id + 0 = 1"));
        assert!(Spi::get_one::<String>("SELECT ask.sql('how many?')").unwrap().is_some(), "built-ins run");
        Spi::run(
            "CREATE FUNCTION public.shout(t text) RETURNS text LANGUAGE plpgsql STABLE AS $$ BEGIN RETURN upper(t); END $$;
             SET ask.allowed_functions = 'public.leaky, public.shout'",
        )
        .unwrap();
        s.set_script(Script::reply_always("SELECT id, public.shout(secret) FROM public.lock_secret"));
        assert!(Spi::get_one::<String>("SELECT ask.sql('which rows?')").unwrap().is_some(), "a listed function runs");
        // A listed function that would take a session-level advisory lock: refused as the
        // lock's call is about to start (no volatile function runs while pg_ask reads),
        // whoever wrote the function.
        s.set_script(Script::reply_always("SELECT id FROM public.lock_secret WHERE public.leaky(secret)"));
        let (code, msg, _) = error_of("SELECT ask.sql('which rows?')");
        assert_ne!(code, "none", "{msg}");
        assert!(msg.contains("pg_advisory_lock"), "{msg}");
        assert_eq!(one::<i64>(locks), 0, "the listed function's lock was released");
        // A lock the session held before is the caller's own, and stays.
        Spi::run("SELECT pg_advisory_lock(4242)").unwrap();
        s.set_script(Script::reply_always("SELECT id, public.shout(secret) FROM public.lock_secret"));
        assert!(Spi::get_one::<String>("SELECT ask.sql('which rows?')").unwrap().is_some());
        assert_eq!(one::<i64>(locks), 1, "the caller's own lock stays");
        Spi::run("SELECT pg_advisory_unlock(4242); RESET ask.allowed_functions").unwrap();
    }

    /// The canary schema of the hostile corpus, and the corpus itself.
    fn corpus() -> Value {
        let corpus: Value = serde_json::from_str(pg_ask_core::guard::HOSTILE_REPLIES).unwrap();
        for stmt in corpus["canary_setup"].as_array().unwrap() {
            Spi::run(stmt.as_str().unwrap()).unwrap();
        }
        corpus
    }

    /// Every reply of the hostile corpus is refused and changes nothing, asked by a role that
    /// may itself write the canary tables and run their functions: only pg_ask's guard stands
    /// in the way. The parse layer and the volatile-function check refuse with 2F003; a function
    /// whose declared volatility is a lie (layer `exec`) is stopped by read-only execution
    /// (25006), or by PostgreSQL's own rule for non-volatile functions (0A000).
    #[pg_test]
    fn hostile_corpus_is_refused_with_nothing_changed() {
        let corpus = corpus();
        let hostile = corpus["hostile"].as_array().unwrap();
        assert!(hostile.len() >= 150, "corpus has {} entries", hostile.len());
        Spi::run(
            "CREATE ROLE ask_test_writer;
             GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON public.canary, public.canary_log TO ask_test_writer;
             GRANT USAGE, UPDATE ON SEQUENCE public.canary_seq TO ask_test_writer;
             GRANT CREATE ON SCHEMA public TO ask_test_writer;",
        )
        .unwrap();
        let fingerprint = "SELECT (SELECT md5(string_agg(id || note, ',' ORDER BY id)) FROM public.canary)
            || (SELECT md5(string_agg(id || note, ',' ORDER BY id)) FROM public.canary_log)
            || (SELECT last_value || is_called::text FROM public.canary_seq)
            || (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace)";
        let before: String = one(fingerprint);
        let s = llm(Script::default());
        Spi::run("SET ask.max_attempts = 1").unwrap();
        for entry in hostile {
            let name = entry["name"].as_str().unwrap();
            s.set_script(Script::reply_always(entry["reply"].as_str().unwrap()));
            Spi::run("SET ROLE ask_test_writer").unwrap();
            let Some((code, msg, _, _)) = error_report("SELECT ask.sql('do the thing')") else {
                panic!("{name} was not refused: it ran");
            };
            Spi::run("RESET ROLE").unwrap();
            match entry["layer"].as_str() {
                // A user's function, whatever volatility it declares, is on no list: the
                // database layer's allow-list refuses it before it could run.
                Some("exec") => assert!(
                    code == "25006" || code == "0A000" || (code == "2F003" && msg.contains("ask.allowed_functions")),
                    "{name} is stopped by the allow-list or read-only execution: {code} {msg}"
                ),
                layer => {
                    assert!(code == "2F003" || (code == "22P02" && msg.contains("no SQL")), "{name}: {code} {msg}");
                    if layer == Some("db") {
                        assert!(
                            msg.contains("volatile") || msg.contains("ask.allowed_functions") || msg.contains("runs SQL given as text"),
                            "{name} is refused by the database layer: {msg}"
                        );
                    }
                }
            }
            assert_eq!(one::<String>(fingerprint), before, "{name} changed something");
        }
        Spi::run("DROP OWNED BY ask_test_writer; DROP ROLE ask_test_writer").unwrap();
    }

    /// Every safe reply of the corpus runs.
    #[pg_test]
    fn safe_corpus_runs() {
        let corpus = corpus();
        let s = llm(Script::default());
        Spi::run("SET ask.max_attempts = 1").unwrap();
        for entry in corpus["safe"].as_array().unwrap() {
            let name = entry["name"].as_str().unwrap();
            s.set_script(Script::reply_always(entry["reply"].as_str().unwrap()));
            let sql = subxact::run(OnSuccess::RollBack, || Spi::get_one::<String>("SELECT ask.sql('read something')").unwrap());
            assert!(matches!(sql, Ok(Some(_))), "{name} should run: {sql:?}");
        }
    }
}
