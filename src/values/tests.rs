//! In-backend tests of the value memory's limits, types, per-column search and embedding
//! dimensions (`cargo pgrx test`), against a stand-in embedding server where a test needs one.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script, StandIn};
    use pgrx::prelude::*;
    use pgrx::JsonB;

    use crate::pg::testing::*;

    const CITIES: &str = "
        CREATE TABLE public.vcities (id int PRIMARY KEY, name text NOT NULL, state text);
        INSERT INTO public.vcities VALUES (1, 'Los Angeles', 'CA'), (2, 'San Francisco', 'CA'), (3, 'Chicago', 'IL');";

    #[pg_test]
    fn the_cap_keeps_the_most_frequent_values() {
        Spi::run(
            "CREATE TABLE public.votes (pick text);
             INSERT INTO public.votes SELECT 'apple' FROM generate_series(1, 5);
             INSERT INTO public.votes SELECT 'pear' FROM generate_series(1, 3);
             INSERT INTO public.votes VALUES ('plum'), ('fig'), (NULL);",
        )
        .unwrap();
        let _s = standin_embeddings(384);
        Spi::run("SET ask.max_values_per_column = 2").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.votes')"), 2);
        let kept: Vec<String> = one("SELECT array_agg(value ORDER BY frequency DESC) FROM ask.value_memory");
        assert_eq!(kept, ["apple", "pear"]);
        assert!(one::<bool>("SELECT capped FROM ask.value_columns WHERE relid = 'public.votes'::regclass"));
        Spi::run("RESET ask.max_values_per_column").unwrap();
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.votes')"), 2, "plum and fig added");
        assert!(!one::<bool>("SELECT capped FROM ask.value_columns WHERE relid = 'public.votes'::regclass"));
        let (code, _, _) = error_of("SET ask.max_values_per_column = 0");
        assert_eq!(code, "22023");
    }

    #[pg_test]
    fn enums_and_domains_are_text_like_and_enum_literals_need_no_memory() {
        Spi::run(
            "CREATE TYPE public.status AS ENUM ('pending', 'shipped', 'delivered', 'returned');
             CREATE DOMAIN public.label AS varchar(40);
             CREATE DOMAIN public.label2 AS public.label;
             CREATE DOMAIN public.status_d AS public.status;
             CREATE DOMAIN public.qty AS int;
             CREATE TABLE public.orders (id int PRIMARY KEY, status public.status, status2 public.status_d,
                 carrier public.label2, code char(3), n public.qty, note text[]);
             INSERT INTO public.orders VALUES (1, 'shipped', 'shipped', 'Federal Express', 'ABC', 1, '{x}'),
                 (2, 'delivered', 'pending', 'United Parcel Service', 'DEF', 2, '{y}');",
        )
        .unwrap();
        // Without any memory, an enum literal is checked against the enum's labels.
        let fix = |sql: &str| -> String { one(&format!("SELECT ask.correct_sql($q${sql}$q$, use_llm => false)")) };
        assert_eq!(fix("SELECT id FROM public.orders WHERE status = 'Shipped'"), "SELECT id FROM public.orders WHERE status = 'shipped'");
        assert_eq!(
            fix("SELECT id FROM public.orders WHERE status2 = 'delivred'"),
            "SELECT id FROM public.orders WHERE status2 = 'delivered'"
        );
        // A label without rows is a legitimate value; a literal of a non-text column is not looked at.
        assert_eq!(fix("SELECT id FROM public.orders WHERE status = 'returned'"), "SELECT id FROM public.orders WHERE status = 'returned'");
        assert_eq!(fix("SELECT id FROM public.orders WHERE n = '2'"), "SELECT id FROM public.orders WHERE n = '2'");
        // Corrected before PostgreSQL would refuse the literal.
        let (code, _, _) = error_of("SELECT id FROM public.orders WHERE status = 'Shipped'");
        assert_eq!(code, "22P02");
        // An unknown label with no clear candidate goes to the LLM, never silently kept as valid.
        let frozen = "SELECT id FROM public.orders WHERE status = 'frozen'";
        assert_eq!(fix(frozen), frozen, "without the LLM nothing is replaced");
        let llm = StandIn::start(Script::reply_always("```sql\nSELECT id FROM public.orders WHERE status = 'pending'\n```")).unwrap();
        Spi::run(&format!("SET ask.base_url = '{}/v1'", llm.url())).unwrap();
        let asked: String = one(&format!("SELECT ask.correct_sql($q${frozen}$q$)"));
        assert_eq!(asked, "SELECT id FROM public.orders WHERE status = 'pending'");
        assert!(llm.requests()[0].prompt.contains("returned"), "the labels are the candidates");
        // index_values takes enums, domains over text (through two levels) and char; not int
        // domains nor arrays.
        let _s = standin_embeddings(384);
        let n: i64 = one("SELECT ask.index_values('public.orders')");
        assert_eq!(n, 2 + 2 + 2 + 2, "status, status2, carrier, code");
        let cols: Vec<i16> = one("SELECT array_agg(attnum ORDER BY attnum) FROM ask.value_columns WHERE relid = 'public.orders'::regclass");
        assert_eq!(cols, [2, 3, 4, 5]);
        let (code, _, hint) = error_of("SELECT ask.index_values('public.orders', ARRAY['n'])");
        assert_eq!(code, "42703");
        assert!(hint.unwrap().contains("domains"));
        // The domain-over-text column is corrected from the memory.
        assert_eq!(
            fix("SELECT id FROM public.orders WHERE carrier = 'federal express'"),
            "SELECT id FROM public.orders WHERE carrier = 'Federal Express'"
        );
    }

    #[pg_test]
    fn a_small_column_among_many_values_still_gets_its_neighbours() {
        let _s = standin_embeddings(384);
        Spi::run(CITIES).unwrap();
        Spi::run(
            "CREATE TABLE public.streets (name text);
             INSERT INTO public.streets SELECT 'Street ' || g || ' of ' || (ARRAY['Los Angeles','Chicago','San Francisco'])[g % 3 + 1]
             FROM generate_series(1, 3000) g;",
        )
        .unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.vcities', ARRAY['name'])"), 3);
        assert_eq!(one::<i64>("SELECT ask.index_values('public.streets')"), 3000);
        // The large column has its own nearest-neighbour, trigram and reversed-value indexes; the
        // small one none.
        let own: Vec<String> = one("SELECT array_agg(i.indexname::text ORDER BY i.indexname) FROM pg_indexes i
             JOIN ask.value_columns vc ON i.indexname LIKE 'value_memory_c' || vc.id || '_%'
             WHERE vc.relid = 'public.streets'::regclass");
        assert_eq!(own.len(), 3, "{own:?}");
        assert!(!one::<bool>("SELECT own_indexes FROM ask.value_columns WHERE relid = 'public.vcities'::regclass"));
        // Every value of the small column comes back as a neighbour, none of the large one's.
        let found = similar("SELECT * FROM ask.similar_values('public.vcities', 'name', 'Los Angeles', 10)");
        let by_emb: Vec<&str> = found.iter().filter(|f| f.2 == "embedding").map(|f| f.0.as_str()).collect();
        assert_eq!(by_emb.len(), 3, "{found:?}");
        assert_eq!(found[0].0, "Los Angeles");
        // The large column is searched through its own indexes and finds the exact neighbour.
        let big = similar("SELECT * FROM ask.similar_values('public.streets', 'name', 'Street 1234 of Chicago', 5)");
        assert_eq!(big.iter().filter(|f| f.2 == "embedding").count(), 5, "{big:?}");
        assert!(big.iter().any(|f| f.0 == "Street 1234 of Chicago" && f.2 == "embedding" && f.1 > 0.999), "{big:?}");
        assert!(big.iter().any(|f| f.0 == "Street 1234 of Chicago" && f.2 == "trigram"), "{big:?}");
        // Correction uses the same path.
        let fixed: String =
            one("SELECT ask.correct_sql($$SELECT 1 FROM public.streets WHERE name = 'street 1234 of chicago'$$, use_llm => false)");
        assert!(fixed.contains("'Street 1234 of Chicago'"), "{fixed}");
        // A typo is found among the literal's index neighbours and fixed without the LLM, early
        // in the value and late.
        for (typo, gold) in
            [("Stret 1234 of Chicago", "Street 1234 of Chicago"), ("Street 2346 of Los Angels", "Street 2346 of Los Angeles")]
        {
            let fixed: String =
                one(&format!("SELECT ask.correct_sql($$SELECT 1 FROM public.streets WHERE name = '{typo}'$$, use_llm => false)"));
            assert!(fixed.contains(&format!("'{gold}'")), "{typo}: {fixed}");
        }
        // Dropping the table's columns drops their own indexes at the next refresh.
        Spi::run("DROP TABLE public.streets").unwrap();
        Spi::run("SELECT ask.refresh_values()").unwrap();
        assert_eq!(one::<i64>("SELECT count(*) FROM pg_indexes WHERE indexname ~ '^value_memory_c[0-9]+_'"), 0);
    }

    #[pg_test]
    fn statements_over_tables_without_memory_cost_no_embedding() {
        Spi::run(CITIES).unwrap();
        // A local model that cannot be loaded, and a server that counts requests: neither is
        // touched when nothing the statement reads is indexed.
        Spi::run("SET ask.model_path = '/nonexistent/model'").unwrap();
        let sql = "SELECT id FROM public.vcities WHERE name = 'LA' AND state IN ('California')";
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${sql}$q$, use_llm => false)")), sql);
        let s = standin_embeddings(384);
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${sql}$q$, use_llm => false)")), sql);
        assert!(s.requests().is_empty());
        // Without the LLM, its settings are not read: a malformed one is no error.
        Spi::run("SET ask.model = ''").unwrap();
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${sql}$q$, use_llm => false)")), sql);
        let (code, _, _) = error_of(&format!("SELECT ask.correct_sql($q${sql}$q$)"));
        assert_eq!(code, "22023", "with the LLM, the malformed setting is raised");
        Spi::run("RESET ask.model").unwrap();
        // Nor when every literal is a stored value.
        Spi::run("SELECT ask.index_values('public.vcities')").unwrap();
        let before = s.requests().len();
        let exact = "SELECT id FROM public.vcities WHERE name = 'Chicago'";
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${exact}$q$, use_llm => false)")), exact);
        assert_eq!(s.requests().len(), before, "no embedding for a stored value");
        // Embeddings off: the memory matches by trigrams only.
        Spi::run("SET ask.embedding_provider = 'off'").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.vcities', ARRAY['name'])"), 3);
        assert!(one::<bool>("SELECT dims IS NULL FROM ask.value_columns WHERE relid = 'public.vcities'::regclass AND attnum = 2"));
        let found = similar("SELECT * FROM ask.similar_values('public.vcities', 'name', 'San Fransisco')");
        assert!(!found.is_empty() && found.iter().all(|f| f.2 == "trigram"), "{found:?}");
        let fixed: String = one("SELECT ask.correct_sql($$SELECT id FROM public.vcities WHERE name = 'San Fransisco'$$, use_llm => false)");
        assert!(fixed.contains("'San Francisco'"), "{fixed}");
    }

    #[pg_test]
    fn embeddings_of_other_dimensions_are_stored_per_column_or_refused() {
        Spi::run(CITIES).unwrap();
        let s = standin_embeddings(1536);
        assert_eq!(one::<i64>("SELECT ask.index_values('public.vcities', ARRAY['name'])"), 3);
        assert_eq!(one::<i32>("SELECT dims FROM ask.value_columns WHERE relid = 'public.vcities'::regclass"), 1536);
        let found = similar("SELECT * FROM ask.similar_values('public.vcities', 'name', 'San Francisco, CA', 3)");
        let top = found.iter().find(|f| f.2 == "embedding").expect("embedding neighbours");
        assert_eq!(top.0, "San Francisco", "{found:?}");
        // A large column of 1536-dimension values gets its own index of that dimension.
        Spi::run("CREATE TABLE public.many (v text); INSERT INTO public.many SELECT 'item ' || g FROM generate_series(1, 2500) g").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.many')"), 2500);
        let def: String = one("SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'value_memory_c%_hnsw'");
        assert!(def.contains("halfvec(1536)"), "{def}");
        let near = similar("SELECT * FROM ask.similar_values('public.many', 'v', 'item 2024', 3)");
        assert!(near.iter().any(|f| f.0 == "item 2024" && f.2 == "embedding"), "{near:?}");
        // Searching with another model's embeddings is refused, not silently compared.
        Spi::run("SET ask.embedding_model = 'another-model'").unwrap();
        let (code, msg, hint) = error_of("SELECT * FROM ask.similar_values('public.vcities', 'name', 'LA')");
        assert_eq!(code, "55000", "{msg}");
        assert!(hint.unwrap().contains("ask.index_values"));
        // Correction falls back to trigrams (and says so) instead.
        let fixed: String = one("SELECT ask.correct_sql($$SELECT id FROM public.vcities WHERE name = 'San Fransisco'$$, use_llm => false)");
        assert!(fixed.contains("'San Francisco'"), "{fixed}");
        // Too many dimensions for an index: refused at index time with a hint.
        s.set_embedding_dim(4096);
        let (code, msg, hint) = error_of("SELECT ask.index_values('public.vcities', ARRAY['state'])");
        assert_eq!(code, "0A000", "{msg}");
        assert!(msg.contains("4096"), "{msg}");
        assert!(hint.unwrap().contains("4000"));
        // A refresh under other settings rebuilds the column's memory with them.
        s.set_embedding_dim(768);
        Spi::run("SELECT ask.refresh_values('public.vcities')").unwrap();
        assert_eq!(one::<i32>("SELECT dims FROM ask.value_columns WHERE relid = 'public.vcities'::regclass"), 768);
        let found = similar("SELECT * FROM ask.similar_values('public.vcities', 'name', 'Chicago', 3)");
        assert!(found.iter().any(|f| f.0 == "Chicago" && f.2 == "embedding" && f.1 > 0.999), "{found:?}");
    }

    pub(crate) fn similar(sql: &str) -> Vec<(String, f64, String)> {
        Spi::connect(|c| {
            c.select(sql, None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<f64>(2).unwrap().unwrap(), r.get::<String>(3).unwrap().unwrap()))
                .collect()
        })
    }

    #[pg_test]
    fn value_memory_finds_what_is_stored() {
        setup();
        let n: i64 = one("SELECT ask.index_values('public.cities')");
        assert_eq!(n, 3, "Los Angeles, San Francisco (name) and CA (state)");
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'LA', 5)");
        let (value, score, method) = &found[0];
        assert_eq!((value.as_str(), method.as_str()), ("Los Angeles", "embedding"), "{found:?}");
        assert!((score - 0.8424).abs() < 2e-3, "{found:?}");
        let typo = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'San Fransisco')");
        assert!(typo.iter().any(|(v, s, m)| v == "San Francisco" && m == "trigram" && *s > 0.5), "{typo:?}");
        // Rebuilding replaces the memory instead of adding to it.
        Spi::run("UPDATE public.cities SET name = 'Los Angeles County' WHERE id = 1").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.cities', ARRAY['name'])"), 2);
        let after = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Los Angeles', 10)");
        assert!(after.iter().all(|(v, _, _)| v != "Los Angeles"), "{after:?}");
    }

    #[pg_test]
    fn value_memory_respects_privileges_and_rls() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("CREATE ROLE ask_test_partial; GRANT SELECT (id, state) ON public.cities TO ask_test_partial;").unwrap();
        Spi::run("SET ROLE ask_test_partial").unwrap();
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.cities', 'name', 'LA')");
        assert_eq!(code, "42501", "{msg}");
        let ok = similar("SELECT * FROM ask.similar_values('public.cities', 'state', 'California')");
        assert!(ok.iter().any(|(v, _, _)| v == "CA"), "a readable column is searchable: {ok:?}");
        let (code, msg, _) = error_of("SELECT count(*) FROM ask.value_memory");
        assert_eq!(code, "42501", "{msg}");
        let (code, msg, _) = error_of("SELECT ask.index_values('public.restaurants')");
        assert_eq!(code, "42501", "only the owner indexes: {msg}");
        Spi::run("RESET ROLE").unwrap();
        Spi::run("ALTER TABLE public.restaurants ENABLE ROW LEVEL SECURITY").unwrap();
        let (code, msg, hint) = error_of("SELECT ask.index_values('public.restaurants')");
        assert_eq!(code, "42501", "{msg}");
        assert!(hint.unwrap().contains("allow_rls"));
        assert_eq!(one::<i64>("SELECT ask.index_values('public.restaurants', allow_rls => true)"), 5);
    }

    #[pg_test]
    fn dropped_columns_leave_no_stale_values() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("ALTER TABLE public.cities DROP COLUMN state").unwrap();
        let (code, msg, _) = error_of("SELECT * FROM ask.similar_values('public.cities', 'state', 'CA')");
        assert_eq!(code, "42703", "{msg}");
        // A new column of the same name does not inherit the old one's memory.
        Spi::run("ALTER TABLE public.cities ADD COLUMN state text").unwrap();
        assert!(similar("SELECT * FROM ask.similar_values('public.cities', 'state', 'CA')").is_empty());
    }

    #[pg_test]
    fn literals_are_corrected_from_the_value_memory() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        let q = "Italian restaurants in LA";
        let _llm = llm(pipeline_script(
            q,
            "SELECT r.name FROM public.restaurants r JOIN public.cities c ON c.id = r.city_id WHERE c.name = 'LA' AND r.cuisine = 'Italian' ORDER BY r.name",
            "ROWS",
        ));
        let sql: String = one(&format!("SELECT ask.sql('{q}')"));
        assert!(sql.contains("c.name = 'Los Angeles'"), "{sql}");
        assert!(sql.contains("r.cuisine = 'Italian'"), "untouched: {sql}");
        let n: i64 = one(&format!("SELECT count(*) FROM ask.rows('{q}')"));
        assert_eq!(n, 2);
        let JsonB(trace) = one::<JsonB>(&format!("SELECT ask.explain('{q}')"));
        let correct = trace["stages"].as_array().unwrap().iter().find(|s| s["stage"] == "correct").unwrap().clone();
        assert_eq!(correct["output"]["changed"], true, "{correct}");
        // Without the LLM: a case slip is fixed, a legitimate absent value is left alone.
        let fixed: String = one("SELECT ask.correct_sql($$SELECT id FROM public.cities WHERE name = 'san francisco'$$, use_llm => false)");
        assert_eq!(fixed, "SELECT id FROM public.cities WHERE name = 'San Francisco'");
        let kept: String = one("SELECT ask.correct_sql($$SELECT id FROM public.cities WHERE name = 'Gotham'$$, use_llm => false)");
        assert_eq!(kept, "SELECT id FROM public.cities WHERE name = 'Gotham'");
    }

    #[pg_test]
    fn refresh_values_adds_new_and_drops_vanished_values() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities')").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (4, 'Chicago', NULL); UPDATE public.cities SET name = 'San Jose' WHERE id = 2").unwrap();
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.cities')"), 3, "+Chicago +San Jose -San Francisco");
        assert_eq!(one::<i64>("SELECT ask.refresh_values('public.cities')"), 0, "nothing left to do");
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Chicago', 10)");
        assert_eq!(found[0].0, "Chicago");
        assert!(found.iter().all(|(v, _, _)| v != "San Francisco"), "{found:?}");
        // A dropped column's memory is forgotten by a refresh of everything.
        Spi::run("ALTER TABLE public.cities DROP COLUMN state").unwrap();
        Spi::run("SELECT ask.refresh_values()").unwrap();
        let columns: i64 = one("SELECT count(*) FROM ask.value_columns");
        assert_eq!(columns, 1, "only cities.name is left");
    }

    #[pg_test]
    fn a_trigger_keeps_the_memory_current_for_any_writer() {
        setup();
        Spi::run("SELECT ask.index_values('public.cities', ARRAY['name'])").unwrap();
        Spi::run("SELECT ask.keep_values_current('public.cities')").unwrap();
        // A writer who may not read the table still keeps its memory current (as its owner).
        Spi::run("CREATE ROLE ask_test_writer; GRANT INSERT ON public.cities TO ask_test_writer").unwrap();
        Spi::run("SET ROLE ask_test_writer").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (7, 'Boston', 'MA')").unwrap();
        Spi::run("RESET ROLE").unwrap();
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Boston', 3)");
        assert_eq!(found[0].0, "Boston", "{found:?}");
        Spi::run("SELECT ask.keep_values_current('public.cities', false)").unwrap();
        Spi::run("INSERT INTO public.cities VALUES (8, 'Denver', 'CO')").unwrap();
        let found = similar("SELECT * FROM ask.similar_values('public.cities', 'name', 'Denver', 3)");
        assert!(found.iter().all(|(v, _, _)| v != "Denver"), "{found:?}");
    }

    const PATIENTS: &str = "
        CREATE TABLE public.patients (id int PRIMARY KEY, sex text, ward text, surname text);
        INSERT INTO public.patients SELECT i, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END,
            CASE WHEN i % 2 = 0 THEN 'North wing' ELSE 'South wing' END, 'Surname ' || i
            FROM generate_series(1, 30) i;";

    #[pg_test]
    fn a_column_of_few_values_is_listed_in_the_prompt_and_its_unknown_literals_go_to_the_llm() {
        setup();
        Spi::run(PATIENTS).unwrap();
        Spi::run("SET ask.embedding_provider = off").unwrap();
        assert_eq!(one::<i64>("SELECT ask.index_values('public.patients')"), 2 + 2 + 30);
        let q = "how many female patients are there?";
        let s = llm(pipeline_script(q, "SELECT count(*) FROM public.patients WHERE sex = 'F'", "ROWS"));
        let sql: String = one(&format!("SELECT ask.sql('{q}')"));
        assert!(sql.contains("sex = 'F'"), "{sql}");
        // The model saw the two sexes and the two wings (most frequent first), not the thirty
        // surnames (more than ask.max_listed_values).
        let prompt = s.requests()[0].prompt.clone();
        assert!(prompt.contains("  sex text  -- values: 'F', 'M'\n"), "{prompt}");
        assert!(prompt.contains("  ward text  -- values: 'North wing', 'South wing'\n"), "{prompt}");
        assert!(prompt.contains("  surname text\n"), "{prompt}");
        // A role that may not read sex is not shown its values.
        Spi::run("CREATE ROLE ask_test_ward; GRANT SELECT (id, ward) ON public.patients TO ask_test_ward").unwrap();
        s.clear_requests();
        Spi::run("SET ROLE ask_test_ward").unwrap();
        let _ = error_report(&format!("SELECT ask('{q}', max_attempts => 1)"));
        Spi::run("RESET ROLE").unwrap();
        let prompt = s.requests()[0].prompt.clone();
        assert!(
            prompt.contains("TABLE public.patients\n  id integer PRIMARY KEY\n  ward text  -- values: 'North wing', 'South wing'\n"),
            "{prompt}"
        );
        assert!(!prompt.contains("'M'"), "{prompt}");
        drop(s);

        // 'female' shares nothing with 'F' a memory can see: without the LLM it stays, and
        // with it the LLM is shown all of the column's values and writes the one it means.
        let female = "SELECT id FROM public.patients WHERE sex = 'female'";
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${female}$q$, use_llm => false)")), female);
        let s = llm(Script::default().rule(Rule::new(&["female"], Reply::text("F"))));
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${female}$q$)")), "SELECT id FROM public.patients WHERE sex = 'F'");
        let asked = s.requests();
        assert_eq!(asked.len(), 1);
        assert!(asked[0].prompt.contains("<value>F</value>") && asked[0].prompt.contains("<value>M</value>"), "{}", asked[0].prompt);
        // The LLM may keep the literal: a value with no rows.
        s.set_script(Script::reply_always("female"));
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${female}$q$)")), female);
        // Nothing listed, nothing asked: the rules alone keep it.
        Spi::run("SET ask.max_listed_values = 0").unwrap();
        s.clear_requests();
        assert_eq!(one::<String>(&format!("SELECT ask.correct_sql($q${female}$q$)")), female);
        assert!(s.requests().is_empty(), "no plausible candidate, and the column's values are not listed");
        let (code, _, _) = error_of("SET ask.max_listed_values = -1");
        assert_eq!(code, "22023");
    }

    #[pg_test]
    fn a_value_the_model_writes_that_was_not_listed_is_written_in_only_when_the_column_holds_it() {
        setup();
        Spi::run(PATIENTS).unwrap();
        Spi::run("SET ask.embedding_provider = off").unwrap();
        Spi::run("SELECT ask.index_values('public.patients')").unwrap();
        // 'Surname' begins all thirty surnames: the LLM is asked, shown ten of them.
        let sql = "SELECT id FROM public.patients WHERE surname = 'Surname'";
        let correct = || one::<String>(&format!("SELECT ask.correct_sql($q${sql}$q$)"));
        let s = llm(Script::reply_always("Surname"));
        assert_eq!(correct(), sql);
        let prompt = s.requests()[0].prompt.clone();
        assert!(prompt.contains("Value as written: <literal>Surname</literal>"), "{prompt}");
        let unlisted = (1..=30).map(|i| format!("Surname {i}")).find(|v| !prompt.contains(&format!("<value>{v}</value>")));
        let unlisted = unlisted.expect("ask.max_listed_values (20) lists at most ten of thirty values");
        // A stored value the memory did not list, written by the model: the column holds it.
        s.set_script(Script::reply_always(&unlisted));
        assert_eq!(correct(), format!("SELECT id FROM public.patients WHERE surname = '{unlisted}'"));
        // In another case, quoted, with a line after it: as the column spells it.
        s.set_script(Script::reply_always(&format!("\"{}\"\nbecause the column numbers them", unlisted.to_uppercase())));
        assert_eq!(correct(), format!("SELECT id FROM public.patients WHERE surname = '{unlisted}'"));
        // What the column does not hold changes nothing, whatever else holds it: another
        // column's value, a value of no column, text that tries to leave the literal.
        for text in ["North wing", "F", "Surname 31", "Surname 1' OR true --", "x' || current_user || '"] {
            s.set_script(Script::reply_always(text));
            assert_eq!(correct(), sql, "{text}");
        }
        // A role that may not read the column is asked nothing about it.
        Spi::run("CREATE ROLE ask_test_nosurname; GRANT SELECT (id, ward) ON public.patients TO ask_test_nosurname").unwrap();
        s.clear_requests();
        Spi::run("SET ROLE ask_test_nosurname").unwrap();
        let kept = one::<String>(&format!("SELECT ask.correct_sql($q${sql}$q$)"));
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(kept, sql);
        assert!(s.requests().is_empty(), "{} requests", s.requests().len());
    }
}
