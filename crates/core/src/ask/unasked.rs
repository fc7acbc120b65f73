//! What the question names and the query does not use, and what the query compares with that
//! the question never asks for.
//!
//! A small model answering "Which restaurants are open in Seattle?" may leave Seattle out, and
//! one answering "List the Japanese restaurants." may add `c.role = 'pastry chef'` from the
//! values it saw. Both queries run and return rows that look like an answer. Two checks read the
//! query that ran against the question (not one step of a plan, nor a follow-up, whose values
//! may be the turn before's):
//!
//! - **named, unused** ([`super::stage::NAMED_VALUE`]): a phrase of the question that the value
//!   memory holds exactly, any case, in a column of the described tables ("Seattle" in
//!   `cities.name`), and that the query neither compares with nor names, as
//!   [`super::quoted::unused`] reads a quoted value (a code such as `'WA'` uses "Washington");
//! - **named, compared elsewhere** (the same stage): such a value compared with a column of a
//!   table the question does not name, when a table it names holds it ("Which chefs are
//!   Italian?" written `restaurants.cuisine = 'Italian'`, while `chefs.nationality` holds
//!   'Italian', or `states.name = 'Japan'` for "Which cities are in Japan?" while
//!   `cities.country` holds it); a table is named when the question writes each word of its
//!   name, singular;
//! - **compared, unasked** ([`super::stage::UNASKED`]): a string the query compares a column
//!   with (`=`, `IN`, `LIKE`, `BETWEEN`; an exclusion is often how a model reads an adjective,
//!   and is left alone) none of whose words the question, or the knowledge its prompt showed,
//!   writes in any form (the same word, its singular, a shared start of five letters or more,
//!   the value as a code of the question's words: `'CA'` for "California", or the words of an
//!   abbreviation it writes in capitals: `'Los Angeles'` for "LA"). A string of no
//!   letters, or with digits (a date, a model number), is not read.
//!
//! Either is asked again once, afresh (the question, the tables and the knowledge alone, as
//! `ask.first_repair = plain` asks: asked to edit such a query with the reason, Qwen2.5-Coder-1.5B
//! wrote the same conditions again in five of five cases, asked afresh it dropped them in four);
//! the first query's rows answer unless a later one returns rows and passes the checks.

use serde_json::{json, Value};

use super::host::Host;
use super::stage;
use crate::clarify::Named;
use crate::text::{plain_words, stem};
use crate::values::literals::{LiteralKind, LiteralRef};

/// What a query that ran leaves out of the question, or adds to it.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Values the question quotes that the query does not use ([`super::quoted`]).
    quoted: Vec<String>,
    /// Phrases of the question the value memory holds that it does not use.
    named: Vec<String>,
    /// Values it compares with that the question does not ask for.
    unasked: Vec<String>,
    /// Values the question names that it compares with a column of a table the question does
    /// not name, while a column of one it names holds them: (value, the column compared, the
    /// column that holds it), columns as `table.column`.
    elsewhere: Vec<(String, String, String)>,
}

impl Found {
    /// Nothing left out, nothing added.
    pub fn is_clean(&self) -> bool {
        self.quoted.is_empty() && self.named.is_empty() && self.unasked.is_empty() && self.elsewhere.is_empty()
    }

    /// The stage that asks the query again: a quoted value first, then a named one.
    pub fn stage(&self) -> &'static str {
        if !self.quoted.is_empty() {
            stage::QUOTED
        } else if !self.named.is_empty() || !self.elsewhere.is_empty() {
            stage::NAMED_VALUE
        } else {
            stage::UNASKED
        }
    }

    /// The stage's output for a query that returned `rows` rows and is asked again.
    pub fn output(&self, rows: usize) -> Value {
        let mut out = json!({});
        let left_out: Vec<&String> = self.quoted.iter().chain(&self.named).collect();
        if !left_out.is_empty() {
            out["left_out"] = json!(left_out);
        }
        if !self.unasked.is_empty() {
            out["unasked"] = json!(self.unasked);
        }
        if !self.elsewhere.is_empty() {
            let e: Vec<Value> =
                self.elsewhere.iter().map(|(v, used, held)| json!({"value": v, "compared_with": used, "held_in": held})).collect();
            out["held_elsewhere"] = json!(e);
        }
        out["rows"] = json!(rows);
        out["asked_again"] = json!(true);
        out
    }

    /// Why the query is asked again, as the model reads it.
    pub fn reason(&self) -> String {
        let left_out: Vec<String> = self.quoted.iter().chain(&self.named).cloned().collect();
        if self.unasked.is_empty() && self.elsewhere.is_empty() {
            super::quoted::reason(&left_out)
        } else {
            reason(&left_out, &self.unasked, &self.elsewhere)
        }
    }
}

/// Reads a query that ran (`sql`, as the model wrote it) against `question` (as the caller
/// asked it), the tables `schema` describes and the `knowledge` its prompt showed. `named`:
/// the phrases the value memory holds, read from the host once per question. A memory or
/// catalog that cannot be read finds nothing: the check never fails a question.
pub(super) fn check(
    host: &mut dyn Host,
    question: &str,
    schema: &str,
    knowledge: &str,
    named: &mut Option<Vec<Named>>,
    sql: &str,
) -> Found {
    let quotes = super::quoted::quoted(question);
    let quoted = super::quoted::unused(quotes.clone(), sql);
    let held = named.get_or_insert_with(|| {
        let tables = super::described_tables(schema);
        host.named_values(question, &tables).unwrap_or_default()
    });
    let phrases: Vec<String> =
        held.iter().map(|n| n.phrase.clone()).filter(|p| !quotes.iter().any(|q| q.eq_ignore_ascii_case(p))).collect();
    let named_unused = super::quoted::unused(phrases, sql);
    let literals = host.literals_of(sql, None).unwrap_or_default();
    let unasked = unasked(&format!("{question}\n{knowledge}"), &literals);
    let elsewhere = elsewhere(question, held, &literals);
    Found { quoted, named: named_unused, unasked, elsewhere }
}

/// The values of `held` (the question's phrases the memory holds) that `literals` compares with
/// a column of a table `question` does not name, while a column of a table it names holds them
/// (module docs): (value, the column compared, the column that holds it).
pub fn elsewhere(question: &str, held: &[Named], literals: &[LiteralRef]) -> Vec<(String, String, String)> {
    let asked: Vec<String> = plain_words(question).iter().map(|w| stem(w)).collect();
    let names_table = |table: &str| {
        let words: Vec<String> = plain_words(&table.replace('_', " ")).iter().map(|w| stem(w)).collect();
        !words.is_empty() && words.iter().all(|w| asked.contains(w))
    };
    let mut out: Vec<(String, String, String)> = Vec::new();
    for lit in literals.iter().filter(|l| matches!(l.kind, LiteralKind::Eq | LiteralKind::In { negated: false })) {
        if names_table(&lit.table.table) {
            continue;
        }
        let Some(n) = held.iter().find(|n| n.phrase.eq_ignore_ascii_case(&lit.value)) else { continue };
        let bare = |t: &str| t.rsplit('.').next().unwrap_or(t).trim_matches('"').to_string();
        if let Some(r) = n.readings.iter().find(|r| bare(&r.table) != lit.table.table && names_table(&bare(&r.table))) {
            let used = format!("{}.{}", lit.table.table, lit.column);
            let held_in = format!("{}.{}", bare(&r.table), r.column);
            if !out.iter().any(|(v, u, _)| *v == lit.value && *u == used) {
                out.push((lit.value.clone(), used, held_in));
            }
        }
    }
    out
}

/// Shortest shared start that makes two words one ("mexican" and "mexico").
const SHARED_START: usize = 5;

/// The values of `literals` (the query's strings compared with columns) that `context` (the
/// question, and the knowledge its prompt showed) does not ask for (module docs), each once,
/// as the query writes them.
pub fn unasked(context: &str, literals: &[LiteralRef]) -> Vec<String> {
    let words: Vec<String> = plain_words(context);
    let folded = words.join(" ");
    // Abbreviations the text writes in capitals ("LA"), which a value may spell out.
    let capitals: Vec<String> =
        context.split(|c: char| !c.is_alphanumeric()).filter(|w| crate::clarify::is_abbreviation(w)).map(str::to_lowercase).collect();
    let mut out: Vec<String> = Vec::new();
    for lit in literals {
        let positive = match &lit.kind {
            LiteralKind::Eq | LiteralKind::Between { negated: false } => true,
            LiteralKind::In { negated } | LiteralKind::Like { negated, .. } => !negated,
            LiteralKind::NotEq | LiteralKind::Between { negated: true } => false,
        };
        let spelled_out = || {
            let phrase = plain_words(&lit.value.replace('_', " ")).join(" ");
            capitals.iter().any(|c| abbreviates(c, &phrase))
        };
        if positive && !asked_for(&lit.value, &words, &folded) && !spelled_out() && !out.contains(&lit.value) {
            out.push(lit.value.clone());
        }
    }
    out
}

/// Whether `value` is asked for by a text whose words are `words` (`folded`: them joined by
/// one space).
fn asked_for(value: &str, words: &[String], folded: &str) -> bool {
    if !value.chars().any(char::is_alphabetic) || value.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let own = plain_words(&value.replace('_', " "));
    if own.is_empty() {
        return true;
    }
    let phrase = own.join(" ");
    if format!(" {folded} ").contains(&format!(" {phrase} ")) {
        return true;
    }
    if own.iter().any(|w| w.chars().count() >= 3 && words.iter().any(|c| same_word(w, c))) {
        return true;
    }
    // A code of a word or of a run of two or three words ('CA' for "california", 'NY' for
    // "new york"), a short value that is a word of the text ('A' for "grade a"), one letter
    // that starts a word of the text that is no stop word ('F' for "female").
    let code: String = own.concat();
    if code.chars().count() <= 4 {
        if words.contains(&code) {
            return true;
        }
        if code.chars().count() == 1
            && words.iter().any(|w| w.chars().count() >= 3 && w.starts_with(code.as_str()) && !crate::text::is_stop_word(w))
        {
            return true;
        }
        for len in 1..=3 {
            for run in words.windows(len) {
                if abbreviates(&code, &run.join(" ")) {
                    return true;
                }
            }
        }
    }
    false
}

/// Two words are one: equal, equal in the singular, or sharing their first
/// [`SHARED_START`] letters.
fn same_word(a: &str, b: &str) -> bool {
    if a == b || stem(a) == stem(b) {
        return true;
    }
    let shared = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    shared >= SHARED_START
}

/// Whether `code` (two to four letters) is a short form of `words`: their first letter first,
/// its letters in order, one of them the start of each word after the first when there are
/// several ('ny' for "new york", 'tx' for "texas").
fn abbreviates(code: &str, words: &str) -> bool {
    let n = code.chars().count();
    if !(2..=4).contains(&n) || !code.chars().all(char::is_alphabetic) || words.chars().count() <= n {
        return false;
    }
    let parts: Vec<&str> = words.split(' ').collect();
    if parts.len() > n || code.chars().next() != words.chars().next() {
        return false;
    }
    if parts.len() > 1 {
        // Each word's first letter, in order, among the code's.
        let mut rest = code.chars();
        return parts.iter().all(|p| p.chars().next().is_some_and(|f| rest.any(|c| c == f)));
    }
    let mut rest = words.chars();
    code.chars().all(|c| rest.any(|v| v == c))
}

/// Why a query is asked again: the values the question names that it left out (`left_out`),
/// those it compares with that the question does not ask for (`unasked`), and those it compares
/// with a column of a table the question does not name (`elsewhere`), as the model reads it.
pub fn reason(left_out: &[String], unasked: &[String], elsewhere: &[(String, String, String)]) -> String {
    let listed = |values: &[String]| values.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ");
    let mut parts: Vec<String> = Vec::new();
    if !left_out.is_empty() {
        parts.push(super::quoted::left_out(left_out));
    }
    if !unasked.is_empty() {
        let (it, them) = if unasked.len() == 1 { ("the value", "it") } else { ("the values", "them") };
        parts.push(format!(
            "the query compares with {it} {}, which the question does not ask for: leave out the conditions on {them} \
             unless the question asks for {them}",
            listed(unasked)
        ));
    }
    for (value, used, held) in elsewhere {
        let asked = held.split('.').next().unwrap_or(held);
        parts.push(format!(
            "the query compares {used} with \"{value}\", but the question asks about {asked}, and {held} holds \"{value}\": compare {held} with it"
        ));
    }
    format!("{}; write the whole query again.", parts.join("; also "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::values::literals::{QualifiedName, TextRange};

    fn lit(value: &str, kind: LiteralKind) -> LiteralRef {
        LiteralRef {
            range: TextRange { start: 0, end: 0 },
            value: value.into(),
            kind,
            table: QualifiedName { schema: "public".into(), table: "t".into() },
            column: "c".into(),
        }
    }

    fn eq(values: &[&str]) -> Vec<LiteralRef> {
        values.iter().map(|v| lit(v, LiteralKind::Eq)).collect()
    }

    #[test]
    fn values_the_question_never_writes_are_unasked() {
        assert_eq!(unasked("List the Japanese restaurants.", &eq(&["pastry chef", "Japanese"])), vec!["pastry chef"]);
        assert_eq!(unasked("Which cities are in Texas?", &eq(&["Mexican", "TX", "$$"])), vec!["Mexican"]);
        assert_eq!(unasked("What is the highest rated restaurant in Rome?", &eq(&["Italian", "Italy", "Rome"])), vec!["Italian", "Italy"]);
        assert_eq!(unasked("List the French restaurants in Paris.", &eq(&["A", "Paris", "French"])), vec!["A"]);
    }

    #[test]
    fn the_questions_words_in_other_forms_are_asked_for() {
        for (q, v) in [
            ("Who are the head chefs?", "head chef"),
            ("List the payments made by credit card.", "credit_card"),
            ("How many cars are electric?", "Electric"),
            ("How many customers live in Texas?", "TX"),
            ("Which cities are in California?", "CA"),
            ("in New York", "NY"),
            ("How many female patients?", "F"),
            ("How many inspections got grade A?", "A"),
            ("How many orders were cancelled?", "canceled"),
            ("restaurants in Mexico City that serve its food", "Mexican"),
            ("the cheap ones", "$"),
            ("sales in 2023", "2023-01-01"),
            ("cars with a V6 engine", "V6"),
            ("successful transactions", "success"),
            ("which Italian restaurants are in LA?", "Los Angeles"),
            ("how many orders of the NYC store", "New York City"),
        ] {
            assert!(unasked(q, &eq(&[v])).is_empty(), "{q} / {v}");
        }
        // Lower-case short words are no abbreviations ("in" does not spell out "Indian").
        assert_eq!(unasked("restaurants in la", &eq(&["Los Angeles", "Indian"])), vec!["Los Angeles", "Indian"]);
        // An exclusion is how a model reads an adjective: not read.
        assert!(unasked("How many active orders?", &[lit("cancelled", LiteralKind::NotEq)]).is_empty());
        assert!(unasked("How many active orders?", &[lit("cancelled", LiteralKind::In { negated: true })]).is_empty());
        assert_eq!(unasked("How many active orders?", &[lit("shipped", LiteralKind::In { negated: false })]), vec!["shipped"]);
        // The same value twice is named once.
        assert_eq!(unasked("q", &eq(&["x y", "x y"])), vec!["x y"]);
    }

    #[test]
    fn a_value_compared_in_a_table_the_question_does_not_name_while_one_it_names_holds_it() {
        let reading = |table: &str, column: &str| crate::clarify::Reading {
            value: "Italian".into(),
            table: format!("public.{table}"),
            column: column.into(),
            table_columns: vec![],
        };
        let held =
            vec![Named { phrase: "Italian".into(), readings: vec![reading("restaurants", "cuisine"), reading("chefs", "nationality")] }];
        let at = |table: &str, column: &str| LiteralRef {
            table: QualifiedName { schema: "public".into(), table: table.into() },
            column: column.into(),
            ..lit("Italian", LiteralKind::Eq)
        };
        let wrong = elsewhere("Which chefs are Italian?", &held, &[at("restaurants", "cuisine")]);
        assert_eq!(wrong, vec![("Italian".to_string(), "restaurants.cuisine".to_string(), "chefs.nationality".to_string())]);
        let r = reason(&[], &[], &wrong);
        assert!(
            r.contains("compares restaurants.cuisine with \"Italian\", but the question asks about chefs, and chefs.nationality holds"),
            "{r}"
        );
        // The column the question's table holds it in; a table the question names; no table named.
        assert!(elsewhere("Which chefs are Italian?", &held, &[at("chefs", "nationality")]).is_empty());
        assert!(elsewhere("How many restaurants have Italian chefs?", &held, &[at("restaurants", "cuisine")]).is_empty());
        assert!(elsewhere("What is Italian?", &held, &[at("restaurants", "cuisine")]).is_empty());
        // A column that does not hold it is no other case ("Which cities are in Japan?" written
        // `states.name = 'Japan'` while `cities.country` holds it); an exclusion is left alone.
        assert_eq!(elsewhere("Which chefs are Italian?", &held, &[at("restaurants", "name")]).len(), 1);
        let not = LiteralRef { kind: LiteralKind::NotEq, ..at("restaurants", "cuisine") };
        assert!(elsewhere("Which chefs are Italian?", &held, &[not]).is_empty());
    }

    #[test]
    fn codes_read_as_short_forms_of_the_questions_words() {
        assert!(abbreviates("ny", "new york") && abbreviates("tx", "texas") && abbreviates("usa", "united states"));
        assert!(!abbreviates("yn", "new york") && !abbreviates("ca", "ca") && !abbreviates("n", "new"));
        assert!(!abbreviates("ab", "alpha beta gamma"), "three words, two letters");
    }

    #[test]
    fn the_reason_names_both_kinds() {
        let r = reason(&["Seattle".into()], &["pastry chef".into()], &[]);
        assert!(r.contains("\"Seattle\"") && r.contains("\"pastry chef\"") && r.ends_with("write the whole query again."), "{r}");
        let r = reason(&[], &["A".into(), "B".into()], &[]);
        assert!(r.starts_with("the query compares with the values \"A\", \"B\"") && r.contains("on them"), "{r}");
        let r = reason(&["Rome".into()], &[], &[]);
        assert!(r.contains("does not use the value \"Rome\"") && r.ends_with("; write the whole query again."), "{r}");
    }
}
