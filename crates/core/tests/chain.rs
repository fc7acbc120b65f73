//! The chain of memory (`ask.do()`) on a fruit shop, with a scripted LLM and a scripted
//! database: multi-step replies as models write them, placeholders filled from earlier
//! results (with and without an LLM rewrite), a failing step, a plan that is too long, DDL.

use std::collections::VecDeque;

use pg_ask_core::ask::{Catalog, ExecFailure, Llm};
use pg_ask_core::chain::{run_chain, stage, ChainConfig, ChainError, ChainHost, Filled, StepKind, StepResult};
use pg_ask_core::guard::Refusal;
use pg_ask_core::llm::{ChatRequest, ChatResponse, LlmError};
use serde_json::{json, Value};

const SCHEMA: &str = "\
TABLE shop.suppliers -- who we buy from
  supplier_id integer PRIMARY KEY (serial)
  name text NOT NULL UNIQUE
  phone text
TABLE shop.fruits
  fruit_id integer PRIMARY KEY (serial)
  name text NOT NULL UNIQUE
  selling_price numeric(8,2) -- per kg
  stock_kg numeric(10,3) NOT NULL DEFAULT 0
TABLE shop.customers
  customer_id integer PRIMARY KEY (serial)
  name text NOT NULL
  phone text
TABLE shop.purchases -- a delivery from a supplier
  purchase_id integer PRIMARY KEY (serial)
  supplier_id integer REFERENCES shop.suppliers
  purchased_on date NOT NULL
TABLE shop.purchase_items
  purchase_id integer REFERENCES shop.purchases
  fruit_id integer REFERENCES shop.fruits
  quantity_kg numeric(10,3)
  unit_cost numeric(8,2)
TABLE shop.sales
  sale_id integer PRIMARY KEY (serial)
  customer_id integer REFERENCES shop.customers
  sold_on date NOT NULL
TABLE shop.sale_items
  sale_id integer REFERENCES shop.sales ON DELETE CASCADE
  fruit_id integer REFERENCES shop.fruits
  quantity_kg numeric(10,3)
  unit_price numeric(8,2)
";

/// A scripted shop: LLM replies in order, and results for statements by a part of their text.
struct Shop {
    replies: VecDeque<String>,
    /// (text the statement contains, what it returns), first match wins.
    results: Vec<(&'static str, Result<StepResult, ExecFailure>)>,
    requests: Vec<(&'static str, ChatRequest)>,
    executed: Vec<String>,
}

impl Shop {
    fn new(replies: &[&str]) -> Shop {
        Shop { replies: replies.iter().map(|r| r.to_string()).collect(), results: Vec::new(), requests: Vec::new(), executed: Vec::new() }
    }

    fn on(mut self, contains: &'static str, result: Result<StepResult, ExecFailure>) -> Shop {
        self.results.push((contains, result));
        self
    }

    fn stages(&self) -> Vec<&'static str> {
        self.requests.iter().map(|(s, _)| *s).collect()
    }
}

fn rows(columns: &[&str], rows: Vec<Vec<Value>>) -> Result<StepResult, ExecFailure> {
    Ok(StepResult { columns: columns.iter().map(|c| c.to_string()).collect(), rows_affected: rows.len() as u64, rows })
}

fn affected(n: u64) -> Result<StepResult, ExecFailure> {
    Ok(StepResult { columns: vec![], rows: vec![], rows_affected: n })
}

impl Catalog for Shop {
    fn schema_text(&mut self) -> Result<String, pg_ask_core::ask::HostError> {
        Ok(SCHEMA.to_string())
    }
    fn select_tables(
        &mut self,
        _: &pg_ask_core::ask::Question,
    ) -> Result<Option<pg_ask_core::ask::Selection>, pg_ask_core::ask::HostError> {
        Ok(None)
    }
    fn literals_of(
        &mut self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<pg_ask_core::values::literals::LiteralRef>, pg_ask_core::ask::HostError> {
        Ok(Vec::new())
    }
}

impl Llm for Shop {
    fn chat(&mut self, stage: &'static str, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.requests.push((stage, req.clone()));
        let content = self.replies.pop_front().unwrap_or_else(|| panic!("no scripted reply for {stage}"));
        Ok(ChatResponse {
            content,
            model: "scripted".into(),
            prompt_tokens: Some(100),
            completion_tokens: Some(20),
            attempts: 1,
            ..Default::default()
        })
    }
}

impl ChainHost for Shop {
    fn execute_step(&mut self, sql: &str) -> Result<StepResult, ExecFailure> {
        self.executed.push(sql.to_string());
        self.results
            .iter()
            .find(|(contains, _)| sql.contains(contains))
            .map(|(_, result)| result.clone())
            .unwrap_or_else(|| panic!("the scripted database has no result for {sql:?}"))
    }
}

const RESTOCK: &str = "We restocked on 2023-01-01 from supplier ABC: 24 kg cherry at 0.8, selling price 1.3";

const RESTOCK_PLAN: &str = "\
Here is how I will record the delivery.

Step 1: Find the supplier ABC
```sql
SELECT supplier_id FROM shop.suppliers WHERE name = 'ABC';
```

Step 2: Record the purchase and get its id
```sql
INSERT INTO shop.purchases (supplier_id, purchased_on)
VALUES (<supplier_id>, '2023-01-01')
RETURNING purchase_id;
```

Step 3: Find the cherry
```sql
SELECT fruit_id FROM shop.fruits WHERE name = 'cherry';
```

Step 4: Record the purchased quantity and its cost
```sql
INSERT INTO shop.purchase_items (purchase_id, fruit_id, quantity_kg, unit_cost)
VALUES (<purchase_id>, <fruit_id>, 24, 0.8);
```

Step 5: Add the stock and set the selling price
```sql
UPDATE shop.fruits SET stock_kg = stock_kg + 24, selling_price = 1.3 WHERE fruit_id = <fruit_id>;
```
";

fn restock_shop(replies: &[&str]) -> Shop {
    Shop::new(replies)
        .on("FROM shop.suppliers", rows(&["supplier_id"], vec![vec![json!(3)]]))
        .on("INSERT INTO shop.purchases", rows(&["purchase_id"], vec![vec![json!(41)]]))
        .on("FROM shop.fruits WHERE name", rows(&["fruit_id"], vec![vec![json!(7)]]))
        .on("INSERT INTO shop.purchase_items", affected(1))
        .on("UPDATE shop.fruits", affected(1))
}

#[test]
fn restock_fills_placeholders_from_one_row_results_without_llm_calls() {
    let summary = "Recorded the delivery of 24 kg of cherries from ABC on 2023-01-01 at 0.80 per kg; \
                   cherries now sell at 1.30 per kg.";
    let mut shop = restock_shop(&[RESTOCK_PLAN, summary]);
    let outcome = run_chain(&mut shop, RESTOCK, &ChainConfig::default()).expect("the chain runs");

    assert_eq!(
        shop.executed,
        [
            "SELECT supplier_id FROM shop.suppliers WHERE name = 'ABC'",
            "INSERT INTO shop.purchases (supplier_id, purchased_on)\nVALUES (3, '2023-01-01')\nRETURNING purchase_id",
            "SELECT fruit_id FROM shop.fruits WHERE name = 'cherry'",
            "INSERT INTO shop.purchase_items (purchase_id, fruit_id, quantity_kg, unit_cost)\nVALUES (41, 7, 24, 0.8)",
            "UPDATE shop.fruits SET stock_kg = stock_kg + 24, selling_price = 1.3 WHERE fruit_id = 7",
        ]
    );
    // Plan and summary only: every placeholder had a one-row source.
    assert_eq!(shop.stages(), [stage::PLAN, stage::SUMMARY]);
    let filled: Vec<Filled> = outcome.steps.iter().map(|s| s.filled).collect();
    assert_eq!(filled, [Filled::AsPlanned, Filled::FromResults, Filled::AsPlanned, Filled::FromResults, Filled::FromResults]);
    assert_eq!(outcome.summary, summary);

    // The planning prompt carries the schema, the instruction as data and the step limit.
    let plan = &shop.requests[0].1;
    assert!(plan.system.contains("never more than 10 steps"));
    assert!(plan.messages[0].content.contains("TABLE shop.sale_items"));
    assert!(plan.messages[0].content.ends_with(&format!("<instruction>{RESTOCK}</instruction>")));
    // The summary sees every statement as it ran and its outcome.
    let summary_prompt = &shop.requests[1].1.messages[0].content;
    assert!(summary_prompt.contains("Step 2: Record the purchase and get its id\nSQL: INSERT INTO shop.purchases"));
    assert!(summary_prompt.contains("Result: 1 row(s) affected"));
    assert!(summary_prompt.contains("[\"purchase_id\"]\n[41]"));

    let v = outcome.to_json(100);
    assert_eq!(v["steps"].as_array().unwrap().len(), 5);
    assert_eq!(v["steps"][0]["kind"], "select");
    assert_eq!(v["steps"][0]["rows_returned"], 1);
    assert_eq!(v["steps"][0]["rows"], json!([{"supplier_id": 3}]));
    assert_eq!(v["steps"][1]["kind"], "insert");
    assert_eq!(v["steps"][1]["rows_affected"], 1);
    assert_eq!(v["steps"][1]["rows"], json!([{"purchase_id": 41}]));
    assert_eq!(v["steps"][1]["filled"], "from_results");
    assert!(v["steps"][1]["planned_sql"].as_str().unwrap().contains("<supplier_id>"));
    assert_eq!(v["steps"][3]["purpose"], "Record the purchased quantity and its cost");
    assert!(v["steps"][4].get("rows").is_none());
    assert_eq!(v["summary"], summary);
    assert_eq!(v["llm_calls"], 2);
    assert_eq!(v["prompt_tokens"], 200);
}

const UNDO: &str = "undo the sale to John Doe of 2023-01-05";

/// A plan in prose, numbered, without fences, wrapped in a transaction the chain ignores.
const UNDO_PLAN: &str = "\
To undo that sale I will put the fruit back in stock and delete the sale.

1. Find the sale:
SELECT s.sale_id FROM shop.sales s JOIN shop.customers c ON c.customer_id = s.customer_id
WHERE c.name = 'John Doe' AND s.sold_on = '2023-01-05';

2. List what was sold in it:
SELECT fruit_id, quantity_kg FROM shop.sale_items WHERE sale_id = <sale_id>;

3. Put the quantities back in stock:
UPDATE shop.fruits SET stock_kg = stock_kg + <quantity_kg> WHERE fruit_id = <fruit_id>;

4. DELETE FROM shop.sale_items WHERE sale_id = <sale_id>;

5. Delete the sale itself:
DELETE FROM shop.sales WHERE sale_id = <sale_id>;

COMMIT;
";

const UNDO_REWRITE: &str = "\
```sql
UPDATE shop.fruits
SET stock_kg = stock_kg + CASE fruit_id WHEN 7 THEN 2.5 WHEN 2 THEN 1 END
WHERE fruit_id IN (7, 2);
```";

fn undo_shop(replies: &[&str]) -> Shop {
    Shop::new(replies)
        .on("JOIN shop.customers", rows(&["sale_id"], vec![vec![json!(58)]]))
        .on(
            "FROM shop.sale_items WHERE",
            rows(&["fruit_id", "quantity_kg"], vec![vec![json!(7), json!("2.500")], vec![json!(2), json!("1.000")]]),
        )
        .on("UPDATE shop.fruits", affected(2))
        .on("DELETE FROM shop.sale_items", affected(2))
        .on("DELETE FROM shop.sales", affected(1))
}

#[test]
fn undo_a_sale_needs_an_llm_rewrite_for_a_multi_row_result() {
    let mut shop = undo_shop(&[UNDO_PLAN, UNDO_REWRITE, "The sale of 2023-01-05 to John Doe was undone."]);
    let outcome = run_chain(&mut shop, UNDO, &ChainConfig::default()).expect("the chain runs");

    assert_eq!(shop.stages(), [stage::PLAN, stage::REWRITE, stage::SUMMARY]);
    assert_eq!(
        shop.executed,
        [
            "SELECT s.sale_id FROM shop.sales s JOIN shop.customers c ON c.customer_id = s.customer_id\n\
             WHERE c.name = 'John Doe' AND s.sold_on = '2023-01-05'",
            "SELECT fruit_id, quantity_kg FROM shop.sale_items WHERE sale_id = 58",
            "UPDATE shop.fruits\nSET stock_kg = stock_kg + CASE fruit_id WHEN 7 THEN 2.5 WHEN 2 THEN 1 END\nWHERE fruit_id IN (7, 2)",
            "DELETE FROM shop.sale_items WHERE sale_id = 58",
            "DELETE FROM shop.sales WHERE sale_id = 58",
        ]
    );
    assert_eq!(outcome.ignored, ["COMMIT"]);
    assert_eq!(outcome.steps[2].filled, Filled::Rewritten);
    assert_eq!(outcome.steps[2].kind, StepKind::Update);
    assert_eq!(outcome.steps[0].purpose.as_deref(), Some("Find the sale"));

    // The rewrite prompt shows the earlier results, the step and what to fill.
    let rewrite = &shop.requests[1].1.messages[0].content;
    assert!(rewrite.contains("Step 2: List what was sold in it\nSQL: SELECT fruit_id, quantity_kg FROM shop.sale_items WHERE sale_id = 58\nResult: 2 row(s)\n[\"fruit_id\",\"quantity_kg\"]\n[7,\"2.500\"]\n[2,\"1.000\"]"), "{rewrite}");
    assert!(rewrite
        .contains("<step number=\"3\">\nUPDATE shop.fruits SET stock_kg = stock_kg + <quantity_kg> WHERE fruit_id = <fruit_id>\n</step>"));
    assert!(rewrite.ends_with("Placeholders to fill: <quantity_kg>, <fruit_id>"));

    let v = outcome.to_json(1);
    assert_eq!(v["steps"][1]["rows"], json!([{"fruit_id": 7, "quantity_kg": "2.500"}]));
    assert_eq!(v["steps"][1]["rows_truncated"], true);
    assert_eq!(v["steps"][3]["rows_affected"], 2);
    assert_eq!(v["ignored"], json!(["COMMIT"]));
}

#[test]
fn a_failing_step_stops_the_chain_and_later_steps_never_run() {
    let fk = ExecFailure::Error {
        sqlstate: "23503".into(),
        message: "insert or update on table \"purchases\" violates foreign key constraint \"purchases_supplier_id_fkey\"".into(),
        detail: Some("Key (supplier_id)=(3) is not present in table \"suppliers\".".into()),
        hint: None,
    };
    let mut shop = Shop::new(&[RESTOCK_PLAN])
        .on("FROM shop.suppliers", rows(&["supplier_id"], vec![vec![json!(3)]]))
        .on("INSERT INTO shop.purchases", Err(fk.clone()));
    let (error, trace) = run_chain(&mut shop, RESTOCK, &ChainConfig::default()).unwrap_err();

    assert_eq!(shop.executed.len(), 2, "steps 3 to 5 must not run");
    assert_eq!(shop.stages(), [stage::PLAN], "no summary of a failed chain");
    match &error {
        ChainError::StepFailed { step: 2, sql, failure } => {
            assert!(sql.contains("VALUES (3, '2023-01-01')"));
            assert_eq!(**failure, fk);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(error.to_string().starts_with("step 2 failed: ERROR: insert or update on table"));
    let recorded = trace.error.expect("the trace records the error");
    assert_eq!(recorded["reason"], "step_failed");
    assert_eq!(recorded["sqlstate"], "23503");
    assert_eq!(recorded["step"], 2);
    assert_eq!(trace.stages.iter().filter(|s| s.stage == stage::EXECUTE).count(), 2);
}

#[test]
fn a_plan_longer_than_max_steps_runs_nothing() {
    let mut shop = restock_shop(&[RESTOCK_PLAN]);
    let cfg = ChainConfig { max_steps: 3, ..ChainConfig::default() };
    let (error, _) = run_chain(&mut shop, RESTOCK, &cfg).unwrap_err();
    assert_eq!(error, ChainError::TooManySteps { planned: 5, max: 3 });
    assert!(shop.executed.is_empty());
    assert!(shop.requests[0].1.system.contains("never more than 3 steps"));
}

#[test]
fn ddl_anywhere_in_the_plan_is_refused_before_anything_runs() {
    let plan = "\
Step 1: Find the customer
```sql
SELECT customer_id FROM shop.customers WHERE name = 'John Doe';
```
Step 2: Add a loyalty column
```sql
ALTER TABLE shop.customers ADD COLUMN loyalty_points integer DEFAULT 0;
```
Step 3: Give points
```sql
UPDATE shop.customers SET loyalty_points = 10 WHERE customer_id = <customer_id>;
```";
    let mut shop = Shop::new(&[plan]);
    let (error, trace) = run_chain(&mut shop, "give John Doe 10 loyalty points", &ChainConfig::default()).unwrap_err();
    match &error {
        ChainError::Refused { step: 2, refusal: Refusal::NotAWriteStep(kind), sql } => {
            assert_eq!(kind, "ALTER TABLE");
            assert!(sql.starts_with("ALTER TABLE shop.customers"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(shop.executed.is_empty(), "the SELECT of step 1 must not run either");
    assert_eq!(trace.error.unwrap()["refusal"], "not_a_write_step");
}

#[test]
fn a_rewrite_may_not_change_the_statement_kind() {
    let hostile = "```sql\nDELETE FROM shop.fruits WHERE fruit_id IN (7, 2);\n```";
    let mut shop = undo_shop(&[UNDO_PLAN, hostile]);
    let (error, _) = run_chain(&mut shop, UNDO, &ChainConfig::default()).unwrap_err();
    assert!(
        matches!(error, ChainError::RewriteChangedKind { step: 3, planned: StepKind::Update, rewritten: StepKind::Delete, .. }),
        "{error:?}"
    );
    assert_eq!(shop.executed.len(), 2);
}

#[test]
fn rewrites_that_cannot_be_used() {
    let mut shop = undo_shop(&[UNDO_PLAN, "CANNOT: the sale has no items to put back."]);
    let (error, _) = run_chain(&mut shop, UNDO, &ChainConfig::default()).unwrap_err();
    assert_eq!(error, ChainError::StepImpossible { step: 3, reason: "the sale has no items to put back.".into() });

    let mut shop =
        undo_shop(&[UNDO_PLAN, "```sql\nUPDATE shop.fruits SET stock_kg = stock_kg + <quantity_kg> WHERE fruit_id IN (7, 2);\n```"]);
    let (error, _) = run_chain(&mut shop, UNDO, &ChainConfig::default()).unwrap_err();
    assert!(matches!(&error, ChainError::UnfilledPlaceholder { step: 3, names, .. } if names == &["quantity_kg"]), "{error:?}");

    let mut shop = undo_shop(&[UNDO_PLAN, "I am not sure what to do here."]);
    let (error, _) = run_chain(&mut shop, UNDO, &ChainConfig::default()).unwrap_err();
    assert!(matches!(error, ChainError::NoSqlInRewrite { step: 3, .. }), "{error:?}");
    assert_eq!(shop.executed.len(), 2);
}

#[test]
fn a_placeholder_without_a_one_row_source_goes_to_the_llm() {
    // The sale lookup finds nothing: `<sale_id>` has no value, so the LLM is asked, and it
    // says the step cannot be done.
    let plan =
        "```sql\nSELECT sale_id FROM shop.sales WHERE sold_on = '2023-01-05';\nDELETE FROM shop.sales WHERE sale_id = <sale_id>;\n```";
    let mut shop = Shop::new(&[plan, "CANNOT - no sale on 2023-01-05 was found"]).on("SELECT sale_id", rows(&["sale_id"], vec![]));
    let (error, _) = run_chain(&mut shop, "delete the sale of 2023-01-05", &ChainConfig::default()).unwrap_err();
    assert_eq!(error.reason_code(), "step_impossible");
    assert!(shop.requests[1].1.messages[0].content.contains("Result: 0 row(s)\n[\"sale_id\"]\n"));
    assert_eq!(shop.executed.len(), 1);
}

#[test]
fn sequences_in_inserts_text_values_and_empty_plans() {
    let plan = "\
Step 1: SELECT name FROM shop.customers WHERE phone = '555-0101';
Step 2: INSERT INTO shop.sales (sale_id, customer_id, sold_on) SELECT nextval('shop.sales_sale_id_seq'), customer_id, DATE '2023-02-01' FROM shop.customers WHERE name = <name> RETURNING sale_id;";
    let mut shop = Shop::new(&[plan, "Recorded a sale for O'Brien."])
        .on("SELECT name", rows(&["name"], vec![vec![json!("O'Brien")]]))
        .on("INSERT INTO shop.sales", rows(&["sale_id"], vec![vec![json!(99)]]));
    let outcome = run_chain(&mut shop, "new sale for the customer with phone 555-0101", &ChainConfig::default())
        .expect("nextval is allowed in an INSERT");
    assert!(shop.executed[1].ends_with("WHERE name = 'O''Brien' RETURNING sale_id"));
    assert_eq!(outcome.steps[1].kind, StepKind::Insert);

    let mut shop = Shop::new(&["I would need to know which supplier you mean."]);
    let (error, _) = run_chain(&mut shop, "restock", &ChainConfig::default()).unwrap_err();
    assert!(matches!(error, ChainError::NoSteps { .. }));

    let mut shop = Shop::new(&[]);
    assert_eq!(run_chain(&mut shop, "  ", &ChainConfig::default()).unwrap_err().0, ChainError::EmptyInstruction);
}

#[test]
fn a_nextval_outside_an_insert_is_refused() {
    let plan = "```sql\nSELECT nextval('shop.sales_sale_id_seq');\n```";
    let mut shop = Shop::new(&[plan]);
    let (error, _) = run_chain(&mut shop, "reserve a sale id", &ChainConfig::default()).unwrap_err();
    assert!(matches!(error, ChainError::Refused { step: 1, refusal: Refusal::ForbiddenFunction(_), .. }), "{error:?}");
    assert!(shop.executed.is_empty());
}
