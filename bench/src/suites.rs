//! The suites `bench_real` evaluates, loaded into `ask.eval_questions`: the sample's, defog's
//! (a slice per database, or one category), and defog's instructions registered once as
//! knowledge.

use postgres::Client;
use serde_json::Value;

use crate::repo;

/// The sample database's suite (`sample/questions.json`); returns its number of questions.
pub fn load_sample(c: &mut Client) -> i32 {
    let text = std::fs::read_to_string(repo().join("sample/questions.json")).unwrap();
    c.query_one("SELECT ask.load_suite('sample', $1::text::jsonb)", &[&text]).unwrap().get(0)
}

/// The first `per_db` questions of each defog database after the first `skip`, in the file's
/// order; with a `category`, of that category alone (`instruct`: the questions defog gives
/// instructions with).
pub fn load_defog(c: &mut Client, per_db: i64, skip: i64, category: Option<&str>, only: Option<&[i32]>) -> i32 {
    let csv = std::fs::canonicalize(repo().join("../shared/datasets/defog/questions_gen_postgres.csv")).unwrap();
    c.batch_execute(&format!(
        "DROP TABLE IF EXISTS defog_q; CREATE TEMP TABLE defog_q (n serial, question text, query text, db_name text, query_category text, instructions text);
         COPY defog_q (question, query, db_name, query_category, instructions) FROM '{}' (FORMAT csv, HEADER true);",
        csv.display()
    ))
    .unwrap();
    // ewallet's tables are loaded into the schema ewallet (see pg_ask_bench::load_defog); its
    // gold queries name them in consumer_div, the schema of defog's own file.
    c.query_one(
        "SELECT ask.load_suite('defog', (SELECT jsonb_agg(to_jsonb(q) - 'n' - 'k' ORDER BY n) FROM
            (SELECT n, question, replace(query, 'consumer_div.', 'ewallet.') AS query, db_name, query_category, instructions,
                    row_number() OVER (PARTITION BY db_name ORDER BY n) AS k FROM defog_q
              WHERE ($3::text IS NULL OR query_category = $3) AND ($4::int[] IS NULL OR n = ANY($4))) q
             WHERE k > $2 AND k <= $2 + $1))",
        &[&per_db, &skip, &category, &only.map(<[i32]>::to_vec)],
    )
    .unwrap()
    .get(0)
}

/// defog's knowledge as a DBA would register it once, not with each question: every distinct
/// line of the instructions its questions carry, and of each database's glossary, as an
/// instruction on the database's schema (`ask.add_instruction`); the questions lose their
/// own instructions. Returns the number of items.
pub fn defog_knowledge(c: &mut Client) -> i64 {
    c.batch_execute("UPDATE ask.eval_questions SET instructions = NULL WHERE suite = 'defog'").unwrap();
    let dbs: Vec<(String, String)> = c
        .query(
            "SELECT DISTINCT q.db_name, e.schema FROM defog_q q JOIN ask.eval_questions e ON e.suite = 'defog' AND e.question = q.question",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut added = 0;
    for (db, schema) in dbs {
        let instructions: Vec<String> = c
            .query("SELECT DISTINCT instructions FROM defog_q WHERE db_name = $1 AND coalesce(instructions, '') <> ''", &[&db])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        for line in defog_lines(&db, instructions) {
            c.query_one("SELECT ask.add_instruction($1, about_schema => $2)", &[&line, &schema]).unwrap();
            added += 1;
        }
    }
    added
}

/// A line of defog's instructions or of a glossary as it is registered: trimmed, a leading
/// `- ` dropped.
pub fn defog_line(text: &str) -> String {
    text.trim().trim_start_matches("- ").trim().to_string()
}

/// The lines registered for defog's database `db`: those of `instructions` (its questions'),
/// then those of its glossary, each once (case aside), empty ones left out.
pub fn defog_lines(db: &str, instructions: impl IntoIterator<Item = String>) -> Vec<String> {
    let glossary = std::fs::read_to_string(repo().join(format!("../shared/datasets/defog/{db}.json")))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v["glossary"].as_str().map(str::to_string))
        .unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    instructions
        .into_iter()
        .flat_map(|text| text.lines().map(defog_line).collect::<Vec<_>>())
        .chain(glossary.lines().map(defog_line))
        .filter(|line| !line.is_empty() && seen.insert(line.to_lowercase()))
        .collect()
}
