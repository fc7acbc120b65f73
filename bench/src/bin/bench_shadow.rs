//! Benchmarks of shadow tables. Run through `scripts/bench.sh shadow`.
//!
//! 1. Capture overhead: a 200,000-row INSERT … SELECT and a 200,000-row UPDATE, each one
//!    statement, with no trigger, with pg_ask's capture (ask.shadow_enable), and with a PL/pgSQL
//!    trigger that logs to_jsonb(NEW)/to_jsonb(OLD) into a table. Median of 3 runs each.
//! 2. Benchmark concurrency: 300 samples against the stand-in answering after 200 ms, with
//!    ask.concurrency = 1 and 8; the speedup against the ideal 8×.

use std::time::Instant;

use llm_standin::{Reply, Rule, Script, StandIn};
use pg_ask_it::{connect, use_llm};
use postgres::Client;

const ROWS: i64 = 200_000;
const REPEATS: usize = 3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn timed(c: &mut Client, sql: &str) -> f64 {
    let t = Instant::now();
    c.batch_execute(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    t.elapsed().as_secs_f64() * 1000.0
}

fn setup_table(c: &mut Client, mode: &str) {
    c.batch_execute(
        "DROP TABLE IF EXISTS bench_cap, bench_cap_log CASCADE;
         CREATE TABLE bench_cap (id bigint PRIMARY KEY, name text NOT NULL, amount numeric(12,2), created timestamptz, note text);
         CREATE TABLE bench_cap_log (seq bigserial, op text, old_row jsonb, new_row jsonb, at timestamptz DEFAULT now());
         CREATE OR REPLACE FUNCTION bench_cap_plpgsql() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           INSERT INTO bench_cap_log (op, old_row, new_row)
           VALUES (TG_OP, CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END);
           RETURN NULL;
         END $$;
         TRUNCATE ask.shadow_log;",
    )
    .unwrap();
    match mode {
        "off" => {}
        "pg_ask" => c.batch_execute("SELECT ask.shadow_enable('bench_cap')").unwrap(),
        "plpgsql" => c
            .batch_execute(
                "CREATE TRIGGER cap AFTER INSERT OR UPDATE OR DELETE ON bench_cap FOR EACH ROW EXECUTE FUNCTION bench_cap_plpgsql()",
            )
            .unwrap(),
        _ => unreachable!(),
    }
    c.batch_execute("CHECKPOINT").unwrap();
}

fn insert_sql() -> String {
    format!(
        "INSERT INTO bench_cap SELECT g, 'name ' || g, g * 1.25, now() - g * interval '1 second', md5(g::text) FROM generate_series(1, {ROWS}) g"
    )
}

const UPDATE_SQL: &str = "UPDATE bench_cap SET amount = amount + 1, note = upper(note)";

fn capture(c: &mut Client) {
    println!("== capture overhead ({ROWS} rows, one statement each, median of {REPEATS})");
    let (insert, update) = (insert_sql(), UPDATE_SQL);
    let mut base = (0.0, 0.0);
    for mode in ["off", "pg_ask", "plpgsql"] {
        let (mut ins, mut upd) = (Vec::new(), Vec::new());
        for _ in 0..REPEATS {
            setup_table(c, mode);
            ins.push(timed(c, &insert));
            c.batch_execute("VACUUM ANALYZE bench_cap").unwrap();
            upd.push(timed(c, update));
        }
        let (i, u) = (median(ins), median(upd));
        if mode == "off" {
            base = (i, u);
        }
        println!("{mode:<8} INSERT {i:>8.0} ms ({:.2}×)   UPDATE {u:>8.0} ms ({:.2}×)", i / base.0, u / base.1);
    }
    let logged: i64 = c.query_one("SELECT count(*) FROM bench_cap_log", &[]).unwrap().get(0);
    assert_eq!(logged, 2 * ROWS, "the PL/pgSQL trigger logged every row");
    setup_table(c, "pg_ask");
    c.batch_execute(&insert).unwrap();
    c.batch_execute(update).unwrap();
    let captured: i64 = c.query_one("SELECT count(*) FROM ask.shadow_log", &[]).unwrap().get(0);
    assert_eq!(captured, 2 * ROWS, "pg_ask captured every row");
    c.batch_execute("SELECT ask.shadow_disable('bench_cap'); DROP TABLE bench_cap, bench_cap_log").unwrap();
}

/// Capture off and on only, alternating so that both see the same background load (quick
/// iterations on the trigger: `scripts/bench.sh capture`).
fn overhead(c: &mut Client) {
    println!("== capture overhead, off and pg_ask alternating ({ROWS} rows, median of {REPEATS})");
    let (insert, update) = (insert_sql(), UPDATE_SQL);
    let mut runs: [(Vec<f64>, Vec<f64>); 2] = Default::default();
    for _ in 0..REPEATS {
        for (m, mode) in ["off", "pg_ask"].into_iter().enumerate() {
            setup_table(c, mode);
            runs[m].0.push(timed(c, &insert));
            c.batch_execute("VACUUM ANALYZE bench_cap").unwrap();
            runs[m].1.push(timed(c, update));
        }
    }
    let [(off_i, off_u), (on_i, on_u)] = runs.map(|(i, u)| (median(i), median(u)));
    println!("off      INSERT {off_i:>8.0} ms            UPDATE {off_u:>8.0} ms");
    println!("pg_ask   INSERT {on_i:>8.0} ms ({:.2}×)   UPDATE {on_u:>8.0} ms ({:.2}×)", on_i / off_i, on_u / off_u);
    c.batch_execute("SELECT ask.shadow_disable('bench_cap'); DROP TABLE bench_cap, bench_cap_log").unwrap();
}

fn concurrency(c: &mut Client) {
    println!("== CALL ask.benchmark: 300 samples, stand-in answering after 200 ms");
    let workload = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/datasets/incondb/1_sql.json")).unwrap();
    c.execute("SELECT ask.load_workload('bench_conc', $1::text::jsonb)", &[&workload]).unwrap();
    let llm = StandIn::start(Script::default().rule(Rule::new(&[], Reply::text("[]")).delay(200))).unwrap();
    use_llm(c, &llm.url());
    let mut times = Vec::new();
    for (n, seed) in [(1, 101), (8, 108)] {
        c.batch_execute(&format!("SET ask.concurrency = {n}")).unwrap();
        let t = timed(c, &format!("CALL ask.benchmark('bench_conc', 5, 0.5, 0.5, 300, ARRAY['sql'], ARRAY['few_shot'], {seed})"));
        println!("concurrency {n}: {:.1} s ({:.1} answers/s)", t / 1000.0, 300.0 / (t / 1000.0));
        times.push(t);
    }
    let speedup = times[0] / times[1];
    println!("speedup {speedup:.2}× of an ideal 8× ({:.0}%)", 100.0 * speedup / 8.0);
}

fn main() {
    let mut c = connect();
    let what = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    if what == "all" || what == "capture" {
        capture(&mut c);
    }
    if what == "overhead" {
        overhead(&mut c);
    }
    if what == "all" || what == "concurrency" {
        concurrency(&mut c);
    }
}
