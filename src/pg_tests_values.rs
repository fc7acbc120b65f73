//! In-backend tests of the value memory's limits, types, per-column search and embedding
//! dimensions (`cargo pgrx test`), against a stand-in embedding server where a test needs one.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Script, StandIn};
    use pgrx::prelude::*;

    use crate::pg_tests::tests::{error_of, one, similar, standin_embeddings};

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
        assert_eq!(fix("SELECT id FROM public.orders WHERE status2 = 'delivred'"), "SELECT id FROM public.orders WHERE status2 = 'delivered'");
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
        let own: Vec<String> = one(
            "SELECT array_agg(i.indexname::text ORDER BY i.indexname) FROM pg_indexes i
             JOIN ask.value_columns vc ON i.indexname LIKE 'value_memory_c' || vc.id || '_%'
             WHERE vc.relid = 'public.streets'::regclass",
        );
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
        let fixed: String = one("SELECT ask.correct_sql($$SELECT 1 FROM public.streets WHERE name = 'street 1234 of chicago'$$, use_llm => false)");
        assert!(fixed.contains("'Street 1234 of Chicago'"), "{fixed}");
        // A typo is found among the literal's index neighbours and fixed without the LLM, early
        // in the value and late.
        for (typo, gold) in [("Stret 1234 of Chicago", "Street 1234 of Chicago"), ("Street 2346 of Los Angels", "Street 2346 of Los Angeles")] {
            let fixed: String = one(&format!("SELECT ask.correct_sql($$SELECT 1 FROM public.streets WHERE name = '{typo}'$$, use_llm => false)"));
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
}
