//! ask.do() on a fruit shop: suppliers, fruits, purchases, customers, sales and sale items,
//! with a stand-in LLM that plans realistic multi-step chains. Each scenario checks the
//! returned jsonb (steps with SQL, rows affected or returned, summary), the tables afterwards
//! and the ledger.

#[pgrx::pg_schema]
mod tests {
    use llm_standin::{Reply, Rule, Script, StandIn};
    use pgrx::prelude::*;
    use pgrx::JsonB;
    use serde_json::{json, Value};

    use crate::pg::testing::{error_report_of as error_of, llm, one};

    const SHOP: &str = "
        CREATE TABLE public.suppliers (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE);
        CREATE TABLE public.fruits (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE,
            stock_kg numeric NOT NULL DEFAULT 0 CHECK (stock_kg >= 0), sell_price numeric);
        CREATE TABLE public.purchases (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            supplier_id int NOT NULL REFERENCES public.suppliers, fruit_id int NOT NULL REFERENCES public.fruits,
            kg numeric NOT NULL CHECK (kg > 0), unit_price numeric NOT NULL, purchased_on date NOT NULL);
        CREATE TABLE public.customers (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL);
        CREATE TABLE public.sales (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            customer_id int NOT NULL REFERENCES public.customers, sold_on date NOT NULL,
            clerk name NOT NULL DEFAULT current_user);
        CREATE TABLE public.sale_items (sale_id int REFERENCES public.sales, fruit_id int REFERENCES public.fruits,
            kg numeric NOT NULL CHECK (kg > 0), price numeric NOT NULL, PRIMARY KEY (sale_id, fruit_id));
        INSERT INTO public.suppliers (name) VALUES ('ABC'), ('Orchard Co');
        INSERT INTO public.fruits (name, stock_kg, sell_price) VALUES ('cherry', 10, 1.3), ('apple', 50, 0.9), ('banana', 30, 0.5);
        INSERT INTO public.customers (name) VALUES ('John Doe'), ('Jane Roe');
        INSERT INTO public.sales (customer_id, sold_on, clerk) VALUES (1, '2023-01-05', 'ask_clerk_a'), (2, '2023-01-05', 'ask_clerk_a');
        INSERT INTO public.sale_items VALUES (1, 1, 2, 1.3), (1, 2, 3, 0.9), (2, 3, 1, 0.5);";

    /// The shop, writes allowed, and a stand-in that plans `plan` for `instruction`, rewrites
    /// steps as `rewrites` say (step marker → reply), and summarises with `summary`.
    fn shop(instruction: &str, plan: &str, rewrites: &[(&str, &str)], summary: &str) -> StandIn {
        Spi::run(SHOP).unwrap();
        Spi::run("SET ask.allow_writes = on").unwrap();
        let key = format!("<instruction>{instruction}</instruction>");
        let mut script = Script::default().rule(Rule::new(&["chain of SQL steps", &key], Reply::text(plan)));
        for (step, reply) in rewrites {
            script = script.rule(Rule::new(&["You complete one step", &key, step], Reply::text(*reply)));
        }
        script = script.rule(Rule::new(&["what was just done", &key], Reply::text(summary)));
        llm(script)
    }

    fn ask_do(instruction: &str) -> Value {
        let JsonB(v) = Spi::get_one_with_args::<JsonB>("SELECT ask.do($1)", &[instruction.into()]).unwrap().unwrap();
        v
    }

    fn error_of_do(instruction: &str) -> (String, String, Option<String>, Option<String>) {
        error_of(&format!("SELECT ask.do($${instruction}$$)"))
    }

    fn ledger() -> Vec<String> {
        Spi::connect(|c| {
            c.select("SELECT stage FROM ask.llm_calls WHERE outcome = 'ok' ORDER BY id", None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap())
                .collect()
        })
    }

    fn stock() -> Vec<(String, String)> {
        Spi::connect(|c| {
            c.select("SELECT name, stock_kg::text FROM public.fruits ORDER BY id", None, &[])
                .unwrap()
                .map(|r| (r.get::<String>(1).unwrap().unwrap(), r.get::<String>(2).unwrap().unwrap()))
                .collect()
        })
    }

    fn kinds_and_counts(out: &Value) -> Vec<(String, String, u64)> {
        out["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let count = s.get("rows_affected").or_else(|| s.get("rows_returned")).and_then(Value::as_u64).unwrap();
                (s["kind"].as_str().unwrap().to_string(), s["filled"].as_str().unwrap().to_string(), count)
            })
            .collect()
    }

    const RESTOCK: &str = "We restocked on 2023-01-01 from supplier ABC: 24 kg cherry at 0.8, selling price 1.3, and 10 kg of a new fruit, mango, at 1.1, selling at 2.0";
    const RESTOCK_PLAN: &str = "Step 1: find the supplier\n```sql\nSELECT id AS supplier_id FROM public.suppliers WHERE name = 'ABC';\n```\n\
        Step 2: find the cherries\n```sql\nSELECT id AS fruit_id FROM public.fruits WHERE name = 'cherry';\n```\n\
        Step 3: add the cherries to the stock\n```sql\nUPDATE public.fruits SET stock_kg = stock_kg + 24, sell_price = 1.3 WHERE id = <fruit_id>;\n```\n\
        Step 4: record the cherry purchase\n```sql\nINSERT INTO public.purchases (supplier_id, fruit_id, kg, unit_price, purchased_on) VALUES (<supplier_id>, <fruit_id>, 24, 0.8, '2023-01-01');\n```\n\
        Step 5: add mango\n```sql\nINSERT INTO public.fruits (name, stock_kg, sell_price) VALUES ('mango', 10, 2.0) RETURNING id AS mango_id;\n```\n\
        Step 6: record the mango purchase\n```sql\nINSERT INTO public.purchases (supplier_id, fruit_id, kg, unit_price, purchased_on) VALUES (<supplier_id>, <mango_id>, 10, 1.1, '2023-01-01');\n```";

    #[pg_test]
    fn a_restock_records_purchases_and_stock() {
        let s = shop(RESTOCK, RESTOCK_PLAN, &[], "Recorded 24 kg of cherries and 10 kg of mango from ABC on 2023-01-01.");
        let out = ask_do(RESTOCK);
        assert_eq!(
            kinds_and_counts(&out),
            [
                ("select", "as_planned", 1),
                ("select", "as_planned", 1),
                ("update", "from_results", 1),
                ("insert", "from_results", 1),
                ("insert", "as_planned", 1),
                ("insert", "from_results", 1)
            ]
            .map(|(k, f, n)| (k.to_string(), f.to_string(), n))
        );
        let steps = out["steps"].as_array().unwrap();
        assert_eq!(
            steps[3]["sql"],
            "INSERT INTO public.purchases (supplier_id, fruit_id, kg, unit_price, purchased_on) VALUES (1, 1, 24, 0.8, '2023-01-01')"
        );
        assert!(steps[3]["planned_sql"].as_str().unwrap().contains("<supplier_id>, <fruit_id>"));
        assert_eq!(steps[4]["rows"], json!([{"mango_id": 4}]));
        assert_eq!(steps[0]["purpose"], "find the supplier");
        assert_eq!(out["summary"], "Recorded 24 kg of cherries and 10 kg of mango from ABC on 2023-01-01.");
        assert_eq!(
            stock(),
            [("cherry", "34"), ("apple", "50"), ("banana", "30"), ("mango", "10")].map(|(a, b)| (a.to_string(), b.to_string()))
        );
        let purchases: String =
            one("SELECT string_agg(format('%s/%s/%s/%s', supplier_id, fruit_id, kg, unit_price), ' ' ORDER BY id) FROM public.purchases");
        assert_eq!(purchases, "1/1/24/0.8 1/4/10/1.1");
        // Two LLM calls (the plan and the summary), both in the ledger; every placeholder came
        // from a one-row result.
        assert_eq!(s.requests().len(), 2);
        assert_eq!(ledger(), ["plan", "summary"]);
        assert_eq!(out["llm_calls"], 2);
    }

    #[pg_test]
    fn a_sale_with_its_items_and_the_stock_it_takes() {
        let instruction = "Sold to Jane Roe on 2023-01-07: 2 kg apple and 1 kg banana at the current prices";
        let plan = "Step 1: find the customer\n```sql\nSELECT id AS customer_id FROM public.customers WHERE name = 'Jane Roe';\n```\n\
            Step 2: record the sale\n```sql\nINSERT INTO public.sales (customer_id, sold_on) VALUES (<customer_id>, '2023-01-07') RETURNING id AS sale_id;\n```\n\
            Step 3: record what was sold\n```sql\nINSERT INTO public.sale_items (sale_id, fruit_id, kg, price) SELECT <sale_id>, f.id, v.kg, f.sell_price FROM (VALUES ('apple', 2), ('banana', 1)) AS v(name, kg) JOIN public.fruits f ON f.name = v.name;\n```\n\
            Step 4: take it from the stock\n```sql\nUPDATE public.fruits f SET stock_kg = f.stock_kg - v.kg FROM (VALUES ('apple', 2), ('banana', 1)) AS v(name, kg) WHERE f.name = v.name;\n```";
        let _s = shop(instruction, plan, &[], "Sold 2 kg of apples and 1 kg of bananas to Jane Roe on 2023-01-07.");
        let out = ask_do(instruction);
        assert_eq!(
            kinds_and_counts(&out),
            [("select", "as_planned", 1), ("insert", "from_results", 1), ("insert", "from_results", 2), ("update", "as_planned", 2)]
                .map(|(k, f, n)| (k.to_string(), f.to_string(), n))
        );
        assert_eq!(out["steps"][1]["rows"], json!([{"sale_id": 3}]));
        let items: String = one(
            "SELECT string_agg(format('%s:%s:%s', fruit_id, kg, price), ' ' ORDER BY fruit_id) FROM public.sale_items WHERE sale_id = 3",
        );
        assert_eq!(items, "2:2:0.9 3:1:0.5");
        assert_eq!(stock()[1..], [("apple", "48"), ("banana", "29")].map(|(a, b)| (a.to_string(), b.to_string())));
        // The sale is the caller's (the column default ran as the caller).
        assert!(one::<bool>("SELECT clerk = current_user FROM public.sales WHERE id = 3"));
    }

    const UNDO: &str = "undo the sale to John Doe of 2023-01-05";
    const UNDO_PLAN: &str = "Step 1: find the sale\n```sql\nSELECT s.id AS sale_id FROM public.sales s JOIN public.customers c ON c.id = s.customer_id WHERE c.name = 'John Doe' AND s.sold_on = '2023-01-05';\n```\n\
        Step 2: what it sold\n```sql\nSELECT fruit_id, kg FROM public.sale_items WHERE sale_id = <sale_id>;\n```\n\
        Step 3: put it back in stock\n```sql\nUPDATE public.fruits SET stock_kg = stock_kg + <kg> WHERE id = <fruit_id>;\n```\n\
        Step 4: remove the items\n```sql\nDELETE FROM public.sale_items WHERE sale_id = <sale_id>;\n```\n\
        Step 5: remove the sale\n```sql\nDELETE FROM public.sales WHERE id = <sale_id>;\n```";
    const UNDO_REWRITE: &str =
        "```sql\nUPDATE public.fruits SET stock_kg = stock_kg + CASE id WHEN 1 THEN 2 WHEN 2 THEN 3 END WHERE id IN (1, 2);\n```";

    #[pg_test]
    fn undoing_a_sale_fills_placeholders_from_earlier_results() {
        let s = shop(
            UNDO,
            UNDO_PLAN,
            &[("<step number=\"3\">", UNDO_REWRITE)],
            "The sale of 2023-01-05 to John Doe was undone: 2 kg cherries and 3 kg apples are back in stock.",
        );
        let out = ask_do(UNDO);
        assert_eq!(
            kinds_and_counts(&out),
            [
                ("select", "as_planned", 1),
                ("select", "from_results", 2),
                ("update", "rewritten", 2),
                ("delete", "from_results", 2),
                ("delete", "from_results", 1)
            ]
            .map(|(k, f, n)| (k.to_string(), f.to_string(), n))
        );
        let steps = out["steps"].as_array().unwrap();
        assert_eq!(steps[1]["sql"], "SELECT fruit_id, kg FROM public.sale_items WHERE sale_id = 1");
        assert_eq!(steps[1]["rows"], json!([{"fruit_id": 1, "kg": 2}, {"fruit_id": 2, "kg": 3}]));
        assert_eq!(steps[4]["sql"], "DELETE FROM public.sales WHERE id = 1");
        // Step 2 returned two rows, so step 3 went to the LLM with the real rows.
        let rewrite = s.requests().into_iter().find(|r| r.prompt.contains("You complete one step")).unwrap().prompt;
        assert!(rewrite.contains("Result: 2 row(s)") && rewrite.contains("Placeholders to fill: <kg>, <fruit_id>"), "{rewrite}");
        assert_eq!(stock(), [("cherry", "12"), ("apple", "53"), ("banana", "30")].map(|(a, b)| (a.to_string(), b.to_string())));
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sales"), 1, "Jane Roe's sale of the same day stays");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sale_items"), 1);
        assert_eq!(ledger(), ["plan", "rewrite", "summary"]);
    }

    #[pg_test]
    fn a_failing_step_after_several_writes_keeps_nothing() {
        let instruction = "Sold to John Doe on 2023-01-08: 100 kg cherry";
        let plan =
            "Step 1\n```sql\nINSERT INTO public.sales (customer_id, sold_on) VALUES (1, '2023-01-08') RETURNING id AS sale_id;\n```\n\
            Step 2\n```sql\nINSERT INTO public.sale_items (sale_id, fruit_id, kg, price) VALUES (<sale_id>, 1, 100, 1.3);\n```\n\
            Step 3\n```sql\nUPDATE public.fruits SET stock_kg = stock_kg - 100 WHERE name = 'cherry';\n```";
        let _s = shop(instruction, plan, &[], "unused");
        let (code, msg, detail, hint) = error_of_do(instruction);
        assert_eq!(code, "23514", "the stock may not go below zero: {msg}");
        assert!(msg.contains("step 3 failed"), "{msg}");
        assert!(detail.unwrap().contains("fruits_stock_kg_check"));
        assert_eq!(hint.as_deref(), Some("Nothing of the chain was kept."));
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sales"), 2, "step 1 was rolled back");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sale_items"), 3, "step 2 was rolled back");
        assert_eq!(stock()[0].1, "10");
    }

    #[pg_test]
    fn a_step_that_runs_too_long_is_cancelled_and_nothing_is_kept() {
        let instruction = "recount the apples";
        // Step 2 has no volatile function, but runs for seconds.
        let plan = "Step 1\n```sql\nUPDATE public.fruits SET stock_kg = 0 WHERE name = 'cherry';\n```\n\
            Step 2\n```sql\nUPDATE public.fruits SET stock_kg = stock_kg + 0 * (SELECT count(*) FROM generate_series(1, 200000000)) WHERE name = 'apple';\n```";
        let _s = shop(instruction, plan, &[], "unused");
        Spi::run("SET ask.statement_timeout = 200").unwrap();
        let (code, msg, _, hint) = error_of_do(instruction);
        assert_eq!(code, "57014", "{msg}");
        assert!(msg.contains("ask.statement_timeout (200 ms)"), "{msg}");
        assert!(hint.unwrap().contains("Raise ask.statement_timeout"));
        assert_eq!(stock()[0].1, "10", "step 1 was rolled back");
        // The caller's own statement_timeout is back: a slow statement of the caller's runs.
        assert_eq!(one::<i64>("SELECT count(*) FROM generate_series(1, 2000000)"), 2_000_000);
    }

    #[pg_test]
    fn limits_writes_off_steps_and_ddl() {
        let s = shop(RESTOCK, RESTOCK_PLAN, &[], "unused");
        // Off: refused before any LLM call.
        Spi::run("SET ask.allow_writes = off").unwrap();
        let (code, _, _, hint) = error_of_do(RESTOCK);
        assert_eq!(code, "42501");
        assert!(hint.unwrap().contains("ask.allow_writes"));
        assert!(s.requests().is_empty());
        // Six planned steps, five allowed: nothing runs.
        Spi::run("SET ask.allow_writes = on; SET ask.max_steps = 5").unwrap();
        let (code, msg, _, hint) = error_of_do(RESTOCK);
        assert_eq!(code, "54000", "{msg}");
        assert!(msg.contains("6 steps, more than ask.max_steps (5)"), "{msg}");
        assert!(hint.unwrap().contains("ask.max_steps"));
        assert_eq!(s.requests().len(), 1, "the plan only");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.purchases"), 0);
        // DDL anywhere in the plan: refused before the first step runs.
        Spi::run("RESET ask.max_steps").unwrap();
        for ddl in [
            "TRUNCATE public.sale_items",
            "ALTER TABLE public.fruits DROP CONSTRAINT fruits_stock_kg_check",
            "CREATE TABLE public.x AS SELECT * FROM public.sales",
        ] {
            let instruction = format!("clean up with {ddl}");
            s.set_script(Script::default().rule(Rule::new(
                &["chain of SQL steps"],
                Reply::text(format!("Step 1\n```sql\nUPDATE public.fruits SET stock_kg = 0;\n```\nStep 2\n```sql\n{ddl};\n```")),
            )));
            let (code, msg, _, _) = error_of_do(&instruction);
            assert_eq!(code, "2F003", "{ddl}: {msg}");
            assert_eq!(stock()[0].1, "10", "{ddl}: step 1 never ran");
        }
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sale_items"), 3);
    }

    #[pg_test]
    fn volatile_functions_other_than_nextval_are_refused() {
        let instruction = "put a random price on apples";
        let s = shop(
            instruction,
            "Step 1\n```sql\nUPDATE public.fruits SET sell_price = round(random()::numeric, 2) WHERE name = 'apple';\n```",
            &[],
            "unused",
        );
        let (code, msg, detail, _) = error_of_do(instruction);
        assert_eq!(code, "2F003", "{msg}");
        assert!(detail.unwrap().contains("volatile function"), "{msg}");
        assert_eq!(one::<String>("SELECT sell_price::text FROM public.fruits WHERE name = 'apple'"), "0.9");
        // A user's function that writes elsewhere, called from an INSERT: refused, never run.
        Spi::run(
            "CREATE TABLE public.audit (n int); CREATE FUNCTION public.audit_bump() RETURNS int LANGUAGE sql VOLATILE
                  AS $$ INSERT INTO public.audit VALUES (1) RETURNING 1 $$;",
        )
        .unwrap();
        let instruction = "a sale to customer 1 today";
        s.set_script(Script::default().rule(Rule::new(
            &["chain of SQL steps"],
            Reply::text("```sql\nINSERT INTO public.sales (customer_id, sold_on) VALUES (public.audit_bump(), DATE '2023-01-09');\n```"),
        )));
        let (code, msg, _, _) = error_of_do(instruction);
        assert_eq!(code, "2F003", "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.audit"), 0);
        // Identity columns (nextval under the hood) and nextval itself in an INSERT are fine.
        Spi::run("CREATE SEQUENCE public.receipt_no").unwrap();
        s.set_script(
            Script::default()
                .rule(Rule::new(
                    &["chain of SQL steps"],
                    Reply::text("```sql\nINSERT INTO public.customers (name) VALUES ('Receipt ' || nextval('public.receipt_no'));\n```"),
                ))
                .rule(Rule::new(&["what was just done"], Reply::text("Added a customer."))),
        );
        let out = ask_do("add a customer named after the next receipt number");
        assert_eq!(out["steps"][0]["rows_affected"], 1);
        assert_eq!(one::<String>("SELECT name FROM public.customers WHERE id = 3"), "Receipt 1");
    }

    #[pg_test]
    fn steps_run_with_the_callers_privileges_and_row_level_security() {
        let s = shop(UNDO, UNDO_PLAN, &[], "unused");
        // Clerk B may work on sales, but row-level security shows each clerk only their own.
        Spi::run(
            "CREATE ROLE ask_clerk_b;
                  GRANT SELECT ON public.customers, public.fruits, public.suppliers TO ask_clerk_b;
                  GRANT SELECT, INSERT, DELETE ON public.sales, public.sale_items TO ask_clerk_b;
                  GRANT UPDATE (stock_kg) ON public.fruits TO ask_clerk_b;
                  ALTER TABLE public.sales ENABLE ROW LEVEL SECURITY;
                  CREATE POLICY own_sales ON public.sales USING (clerk = current_user);",
        )
        .unwrap();
        s.set_script(Script::default().rule(Rule::new(&["chain of SQL steps"], Reply::text(UNDO_PLAN))).rule(Rule::new(
            &["You complete one step", "Result: 0 row(s)"],
            Reply::text("CANNOT no sale to John Doe on 2023-01-05 was found"),
        )));
        Spi::run("SET ROLE ask_clerk_b").unwrap();
        let (code, msg, _, _) = error_of_do(UNDO);
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "22P02", "{msg}");
        assert!(msg.contains("step 2 cannot be done: no sale to John Doe"), "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sale_items"), 3);
        // The schema the LLM saw was clerk B's: no purchases table, which B may not read.
        let plan_prompt = s.requests()[0].prompt.clone();
        assert!(plan_prompt.contains("TABLE public.sales") && !plan_prompt.contains("TABLE public.purchases"), "{plan_prompt}");
        // A step on a table B may not write fails with PostgreSQL's own error.
        s.set_script(Script::default().rule(Rule::new(
            &["chain of SQL steps"],
            Reply::text("```sql\nINSERT INTO public.sales (customer_id, sold_on) VALUES (1, '2023-01-09') RETURNING id AS sale_id;\n```\n```sql\nINSERT INTO public.purchases (supplier_id, fruit_id, kg, unit_price, purchased_on) VALUES (1, 1, 5, 0.8, '2023-01-09');\n```"),
        )));
        Spi::run("SET ROLE ask_clerk_b").unwrap();
        let (code, msg, _, _) = error_of_do("restock 5 kg cherry and sell it");
        Spi::run("RESET ROLE").unwrap();
        assert_eq!(code, "42501", "{msg}");
        assert!(msg.contains("permission denied for table purchases"), "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.sales"), 2, "the first step was rolled back");
    }

    const SHOP_FRUIT: &str = "
        CREATE TABLE public.suppliers (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, name text NOT NULL UNIQUE);
        CREATE TABLE public.purchases (id int GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            supplier_id int NOT NULL REFERENCES public.suppliers(id), fruit text NOT NULL,
            kg numeric NOT NULL CHECK (kg > 0), price numeric NOT NULL);";

    fn shop_llm(plan: &str) -> StandIn {
        llm(Script::default()
            .rule(Rule::new(&["chain of SQL steps", "<instruction>"], Reply::text(plan)))
            .rule(Rule::new(&["what was just done"], Reply::text("Recorded supplier ABC and a purchase of 24 kg of cherries at 0.8."))))
    }

    #[pg_test]
    fn ask_do_runs_a_chain_and_fills_placeholders() {
        Spi::run(SHOP_FRUIT).unwrap();
        let s = shop_llm(
            "1. INSERT INTO public.suppliers (name) VALUES ('ABC') RETURNING id;\n\
             2. INSERT INTO public.purchases (supplier_id, fruit, kg, price) VALUES (<id>, 'cherry', 24, 0.8);",
        );
        let (code, _, hint) = crate::pg::testing::error_of("SELECT ask.do('We restocked from supplier ABC: 24 kg cherry at 0.8')");
        assert_eq!(code, "42501", "off by default");
        assert!(hint.unwrap().contains("ask.allow_writes"));
        Spi::run("SET ask.allow_writes = on").unwrap();
        let JsonB(out) = one::<JsonB>("SELECT ask.do('We restocked from supplier ABC: 24 kg cherry at 0.8')");
        let steps = out["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "{out}");
        assert!(steps[1]["sql"].as_str().unwrap().contains("VALUES (1, 'cherry'"), "{out}");
        assert!(out["summary"].as_str().unwrap().contains("24 kg"));
        let n: i64 = one("SELECT count(*) FROM public.purchases p JOIN public.suppliers s ON s.id = p.supplier_id WHERE s.name = 'ABC'");
        assert_eq!(n, 1);
        // Plan and summary only: the placeholder was filled from step 1's row without the LLM.
        assert_eq!(s.requests().len(), 2);
    }

    #[pg_test]
    fn ask_do_failing_step_keeps_nothing() {
        Spi::run(SHOP_FRUIT).unwrap();
        Spi::run("SET ask.allow_writes = on").unwrap();
        let _s = shop_llm(
            "1. INSERT INTO public.suppliers (name) VALUES ('XYZ') RETURNING id;\n\
             2. INSERT INTO public.purchases (supplier_id, fruit, kg, price) VALUES (<id>, 'plum', -5, 1.0);",
        );
        let (code, msg, _) = crate::pg::testing::error_of("SELECT ask.do('Bought -5 kg of plums from XYZ')");
        assert_eq!(code, "23514", "the CHECK violation's own SQLSTATE: {msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.suppliers WHERE name = 'XYZ'"), 0, "step 1 rolled back too");
    }

    #[pg_test]
    fn ask_do_never_runs_ddl() {
        Spi::run(SHOP_FRUIT).unwrap();
        Spi::run("SET ask.allow_writes = on").unwrap();
        let _s = shop_llm("1. INSERT INTO public.suppliers (name) VALUES ('Q');\n2. DROP TABLE public.purchases;");
        let (code, msg, _) = crate::pg::testing::error_of("SELECT ask.do('clean up')");
        assert_eq!(code, "2F003", "{msg}");
        assert_eq!(one::<i64>("SELECT count(*) FROM public.suppliers"), 0);
        assert_eq!(one::<i64>("SELECT count(*) FROM pg_class WHERE relname = 'purchases'"), 1);
    }
}
