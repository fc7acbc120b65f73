//! The generation and repair loop: SQL written for a question over one description, run, and
//! repaired from its errors, with the SQL grammar brought in where the settings say.

use std::time::Instant;

use serde_json::json;

use super::call::call;
use super::execute::{guarded_execute, with_step, Verdict};
use super::host::{ExecFailure, Host, SqlState};
use super::outcome::AskError;
use super::stage;
use crate::config::{AskConfig, FirstRepair, GrammarUse};
use crate::constrain::grammar::{sql_grammar, GrammarOptions};
use crate::constrain::Constraint;
use crate::extract::extract_sql;
use crate::guard::CheckedSql;
use crate::prompt;
use crate::rows::ResultSet;
use crate::trace::{ms_since, StageTrace, Trace};

/// What generation is shown beside the question: verified queries of similar questions
/// (question, SQL), in a conversation the earlier turn's question and SQL, to edit, and the
/// knowledge the database's owners wrote that bears on it.
#[derive(Debug, Default)]
pub(super) struct Examples {
    pub verified: Vec<(String, String)>,
    pub previous: Option<(String, String)>,
    /// The knowledge items relevant to the question ([`crate::knowledge::relevant`]).
    pub knowledge: Vec<crate::knowledge::Item>,
}

/// Generate SQL for `question` over `schema`, check, correct and execute it, and repair it
/// from errors up to `cfg.max_attempts` times. `draft`: a query already written (by the plan
/// stage) that stands for the first reply. `step`: the plan step this belongs to, for the
/// trace. `examples`: what the prompt shows beside the question ([`Examples`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn generate_and_run(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    schema: &str,
    cfg: &AskConfig,
    draft: Option<&str>,
    step: Option<usize>,
    examples: &Examples,
) -> Result<(String, ResultSet), AskError> {
    let shown: Vec<(&str, &str)> = examples.verified.iter().map(|(q, s)| (q.as_str(), s.as_str())).collect();
    let previous = examples.previous.as_ref().map(|(q, s)| (q.as_str(), s.as_str()));
    let offered: Vec<&crate::knowledge::Item> = examples.knowledge.iter().collect();
    let knowledge = crate::knowledge::render(&offered);
    let mut req = prompt::sql_request_with_knowledge(question, schema, &knowledge, &shown, previous);
    // The described tables' columns: a name the model writes that is one of them is that
    // column, not a metric's, filter's or dimension's name.
    // The described tables, read from the rendered schema when something needs them (the
    // knowledge's names, a failure's hint): most questions need neither.
    let described = std::cell::OnceCell::new();
    let tables = || described.get_or_init(|| crate::schema::parse_rendered(schema)).as_slice();
    let columns: Vec<String> =
        if offered.is_empty() { Vec::new() } else { tables().iter().flat_map(|t| &t.columns).map(|c| c.name.to_lowercase()).collect() };
    let first = req.clone();
    let mut constraint: Option<Constraint> = None;
    // The grammar is built before the first call that needs it (a plan's draft needs none):
    // the first one with `on`; with `auto` a later repair of queries the grammar would have
    // ruled out (see `grammar_due` below).
    let mut grammar_built = cfg.sql_grammar == GrammarUse::Off;
    // Attempts that failed in a way the grammar rules out.
    let mut ruled_out = 0u32;
    let max_attempts = cfg.max_attempts.max(1);
    // What each attempt wrote (its SQL, or its whole reply when it had none), white space
    // folded, with how it ended: a repair that writes the same again would end the same way,
    // so it is neither run nor asked again.
    let mut tried: Vec<(bool, String, u32, AskError)> = Vec::new();
    // The first query that ran and returned nothing (no rows, or only NULL): asked once more,
    // and the answer when no later query returns something ([`super::repair_hint::nothing`]).
    // Also the first query that ran with rows but left out a value the question quotes: asked
    // again once, and the answer when no later query runs ([`super::quoted`]). Each is kept
    // with the stage that says why.
    let mut nothing: Option<(u32, String, ResultSet, &'static str)> = None;
    let mut quoted_asked = false;
    // The phrases of the question the value memory holds, read once when a query first runs.
    let mut named: Option<Vec<crate::clarify::Named>> = None;
    let mut asked_afresh = false;
    for attempt in 1..=max_attempts {
        trace.attempts += 1;
        let reply = match (attempt, draft) {
            (1, Some(d)) => format!("```sql\n{}\n```", d.trim()),
            _ => {
                // `auto`: the grammar comes in once the model's own repair failed too, or for
                // the last attempt, so that a question never ends on a name that does not
                // exist, and a repair the model gets right by itself is its own.
                let grammar_due = match cfg.sql_grammar {
                    GrammarUse::Always => true,
                    GrammarUse::Repair => ruled_out >= 2 || (ruled_out >= 1 && attempt == max_attempts),
                    GrammarUse::Off => false,
                };
                if !grammar_built && grammar_due {
                    grammar_built = true;
                    if let Some(gbnf) = grammar_for(trace, schema, step) {
                        let grammar = Constraint::Grammar { gbnf };
                        req = req.constrain(grammar.clone());
                        constraint = Some(grammar);
                    }
                }
                let stage_name = if attempt == 1 { stage::GENERATE } else { stage::REPAIR };
                let reply = match call(host, trace, stage_name, Some(attempt), &req, cfg.max_prompt_tokens) {
                    Ok(reply) => reply,
                    // Rows kept for a quoted value they left out answer when the repair
                    // cannot be asked (the server fails, the budget refuses).
                    Err(e) => match kept_quoted(trace, step, &mut nothing) {
                        Some(kept) => return Ok(kept),
                        None => return Err(e),
                    },
                };
                if !grammar_built {
                    // `auto` before a failure the grammar rules out: the model's own query.
                    if let Some(st) = trace.stages.last_mut() {
                        if st.output.get("constrained").is_none() && st.output.get("unconstrained").is_none() {
                            st.output["unconstrained"] = json!("free_first");
                        }
                    }
                }
                reply
            }
        };
        let (mut extracted, checked) = match statement_of(host, trace, question, &reply, &offered, &columns, &tables) {
            Some((sql, verdict)) => (Some(sql), Some(verdict)),
            None => (None, None),
        };
        let folded = fold_space(extracted.as_deref().unwrap_or(&reply));
        if let Some((_, _, first, ended)) = tried.iter().find(|(had_sql, text, ..)| *had_sql == extracted.is_some() && *text == folded) {
            let (reason, what) =
                if extracted.is_some() { ("repeats_failed", "statement failed") } else { ("repeats_reply", "reply without SQL came") };
            let input = match &extracted {
                Some(sql) => json!({"sql": sql}),
                None => json!({"reply_chars": reply.len()}),
            };
            let mut st = StageTrace::new(stage::GUARD, with_step(input, step));
            st.attempt = Some(attempt);
            st.output = json!({"allowed": false, "reason": reason, "first_attempt": first});
            st.error = Some(format!("the same {what} in attempt {first}; it is not tried again"));
            trace.push(st);
            // `auto` before the grammar came in: the same request is asked again under it, so
            // that the question does not end on what the grammar rules out.
            if cfg.sql_grammar == GrammarUse::Repair && !grammar_built && attempt < max_attempts && grammar_rules_out(ended) {
                ruled_out = ruled_out.max(2);
                if let Some(last) = req.messages.iter_mut().rev().find(|m| matches!(m.role, crate::llm::Role::User)) {
                    last.content.push_str("\nThe query just written is one that failed before: write a different one.");
                }
                continue;
            }
            // The query that returned nothing, written again when asked to change it: asked
            // afresh once, without it (a small model asked to edit a query that ran mostly
            // writes it again).
            let again = nothing.as_ref().is_some_and(|(at, ..)| at == first);
            if again && !asked_afresh && attempt < max_attempts {
                if let Some(next) = prompt::plain_request_within(question, schema, &knowledge, cfg.max_prompt_tokens) {
                    asked_afresh = true;
                    req = carrying(next, &constraint);
                    if let Some(st) = trace.stages.last_mut() {
                        st.output["asked_afresh"] = json!(true);
                    }
                    continue;
                }
            }
            if let Some(kept) = kept_nothing(trace, step, &mut nothing) {
                return Ok(kept);
            }
            return Err(with_attempts(ended.clone(), attempt));
        }
        let mut points_at_the_change = false;
        let (failure, ended) = match extracted.clone().zip(checked) {
            None => (
                "the reply contained no SQL query".to_string(),
                AskError::NoSql { attempts: attempt, reply: reply.chars().take(300).collect() },
            ),
            Some((sql, checked)) => {
                let ran = guarded_execute(host, trace, attempt, step, &sql, checked, cfg.max_prompt_tokens);
                // The described table a missing relation's name is nearly, run before the model
                // is asked: what that query comes to is this attempt's, and a repair is shown it.
                let (sql, ran, renamed) =
                    super::named_table::or_renamed(host, trace, attempt, step, sql, ran, tables(), cfg.max_prompt_tokens);
                // Month or weekday names sorted as text, run again in calendar order.
                let (sql, ran, reordered) = super::calendar::or_in_order(host, trace, attempt, step, sql, ran, cfg.max_prompt_tokens);
                if renamed || reordered {
                    extracted = Some(sql.clone());
                }
                // After rows kept for a value the question names that they left out (or one it
                // does not ask for that they compare with), a query answers only when it returns
                // something, uses the values and adds none; otherwise the kept rows do.
                if let Ok(done) = &ran {
                    let still = |host: &mut dyn Host, named: &mut _, why: &str| {
                        super::repair_hint::is_nothing(&done.1)
                            || if why == stage::SHAPE {
                                super::shape::mismatch(&trace.question, done.0.statement(), &done.1).is_some()
                            } else {
                                !super::unasked::check(host, &trace.question, schema, &knowledge, named, &sql).is_clean()
                            }
                    };
                    if nothing.as_ref().is_some_and(|k| ASKED_FOR_WORDS.contains(&k.3) && still(host, &mut named, k.3)) {
                        if let Some(kept) = kept_quoted(trace, step, &mut nothing) {
                            return Ok(kept);
                        }
                    }
                }
                // Asked again for what the question asks: once, for the whole question, not one
                // step of a plan, and only when no vote chooses among candidates.
                let may_ask = |done: &(CheckedSql, ResultSet)| {
                    !quoted_asked
                        && nothing.is_none()
                        && cfg.candidates < 2
                        && attempt < max_attempts
                        && step.is_none()
                        && !super::repair_hint::is_nothing(&done.1)
                };
                let found = match &ran {
                    // The question as the caller wrote it (not with a reading pg_ask wrote in),
                    // and not a follow-up (whose values may be the ones it replaces).
                    Ok(done) if may_ask(done) && !matches!(trace.reading, Some(crate::conversation::Reading::Rewritten { .. })) => {
                        super::unasked::check(host, &trace.question, schema, &knowledge, &mut named, &sql)
                    }
                    _ => super::unasked::Found::default(),
                };
                // A count where the question asks for rows, or rows where it asks how many: read
                // from the caller's own words, a follow-up's too.
                let shape = match &ran {
                    Ok(done) if found.is_clean() && may_ask(done) => super::shape::mismatch(&trace.question, done.0.statement(), &done.1),
                    _ => None,
                };
                match ran {
                    // Rows in another shape than the one asked for: asked once more as an edit,
                    // this result kept.
                    Ok(done) if let Some(shape) = shape => {
                        quoted_asked = true;
                        points_at_the_change = true;
                        let rows = done.1.rows.len();
                        kept_and_asked_again(
                            trace,
                            step,
                            attempt,
                            stage::SHAPE,
                            shape.output(rows),
                            shape.reason(rows),
                            (done.0.sql, done.1),
                            &mut nothing,
                        )
                    }
                    // Rows from a query that left out a value the question names, or compares
                    // with one it does not ask for: asked once more, this result kept.
                    Ok(done) if !found.is_clean() => {
                        quoted_asked = true;
                        // A quoted value is asked as an edit; a named or unasked one afresh (the
                        // question and the tables alone): asked to edit such a query, the model
                        // wrote the same conditions again.
                        points_at_the_change = found.stage() == stage::QUOTED;
                        let output = found.output(done.1.rows.len());
                        let message = found.reason();
                        kept_and_asked_again(trace, step, attempt, found.stage(), output, message, (done.0.sql, done.1), &mut nothing)
                    }
                    Ok(done) if super::repair_hint::is_nothing(&done.1) && attempt < max_attempts => {
                        match super::repair_hint::impossible_condition(&done.0) {
                            // No rows, from a condition no row can meet: asked once more.
                            Some(why) if done.1.rows.is_empty() => {
                                if let Some(st) = trace.stages.last_mut() {
                                    st.output["impossible_condition"] = json!(why);
                                }
                                let message = format!("the query returned no rows: {why}");
                                (
                                    message.clone(),
                                    AskError::Failed {
                                        attempts: attempt,
                                        sqlstate: SqlState::or_internal("02000"),
                                        message,
                                        sql: done.0.sql,
                                    },
                                )
                            }
                            // Nothing from a query that ran: asked once more, this result kept (with
                            // several candidates, the vote draws them instead).
                            _ if nothing.is_none() && cfg.candidates < 2 => {
                                points_at_the_change = true;
                                let output = json!({"rows": done.1.rows.len(), "asked_again": true});
                                let message = super::repair_hint::nothing(&done.1);
                                kept_and_asked_again(
                                    trace,
                                    step,
                                    attempt,
                                    stage::NOTHING,
                                    output,
                                    message,
                                    (done.0.sql, done.1),
                                    &mut nothing,
                                )
                            }
                            _ => {
                                return vote(
                                    host,
                                    trace,
                                    &req,
                                    cfg,
                                    attempt,
                                    step,
                                    (done.0.sql, done.1),
                                    question,
                                    &offered,
                                    &columns,
                                    &tables,
                                )
                            }
                        }
                    }
                    Ok(done) => {
                        return vote(host, trace, &req, cfg, attempt, step, (done.0.sql, done.1), question, &offered, &columns, &tables)
                    }
                    Err(failure) => {
                        // The column PostgreSQL's hint names, tried before the model is asked.
                        if let Some(done) =
                            super::named_column::run_again(host, trace, attempt, step, &sql, &failure, cfg.max_prompt_tokens)
                        {
                            return vote(host, trace, &req, cfg, attempt, step, done, question, &offered, &columns, &tables);
                        }
                        points_at_the_change = super::repair_hint::points_at_the_change(&failure, tables());
                        let mut text = failure.for_llm();
                        if let Some(note) = super::repair_hint::hint(&failure, tables()) {
                            text.push_str("\nNOTE: ");
                            text.push_str(&note);
                        }
                        let ended = match failure {
                            ExecFailure::Refused { reason } => AskError::Refused { attempts: attempt, reason, sql },
                            ExecFailure::Error { sqlstate, message, .. } => AskError::Failed { attempts: attempt, sqlstate, message, sql },
                        };
                        (text, ended)
                    }
                }
            }
        };
        ruled_out += u32::from(grammar_rules_out(&ended));
        tried.push((extracted.is_some(), folded, attempt, ended));
        if attempt < max_attempts {
            // `restart`: the first repair of a query that was written is asked from the
            // question, the failed query left out; `plain`: asked afresh, without the rules.
            // `auto`: an edit when the failure points at what to change, afresh otherwise.
            let first_repair = match (attempt == 1 && extracted.is_some(), cfg.first_repair) {
                (false, _) => FirstRepair::Edit,
                (true, FirstRepair::Auto) if points_at_the_change => FirstRepair::Edit,
                (true, FirstRepair::Auto) => FirstRepair::Plain,
                (true, chosen) => chosen,
            };
            let next = match first_repair {
                FirstRepair::Restart => prompt::restart_request_within(&first, &failure, cfg.max_prompt_tokens),
                FirstRepair::Plain => prompt::plain_request_within(question, schema, &knowledge, cfg.max_prompt_tokens),
                FirstRepair::Edit | FirstRepair::Auto => {
                    prompt::repair_request_within(&first, &req, &reply, extracted.as_deref(), &failure, cfg.max_prompt_tokens)
                }
            };
            match next {
                // The shortened conversation starts from the first request, which may not
                // carry the grammar yet.
                Some(next) => req = carrying(next, &constraint),
                None => break,
            }
        }
    }
    if let Some(kept) = kept_nothing(trace, step, &mut nothing) {
        return Ok(kept);
    }
    Err(tried.pop().map(|(.., ended)| ended).expect("every attempt that did not return is recorded"))
}

/// The query kept when it was asked again (it returned nothing, or left out a quoted value),
/// as the answer once no later attempt returned anything; its stage says which attempt answers.
fn kept_nothing(
    trace: &mut Trace,
    step: Option<usize>,
    nothing: &mut Option<(u32, String, ResultSet, &'static str)>,
) -> Option<(String, ResultSet)> {
    let (attempt, sql, rows, why) = nothing.take()?;
    kept_stage(trace, why, step, attempt, &sql, json!({"rows": rows.rows.len(), "answers": true}));
    Some((sql, rows))
}

/// The query `attempt` ran (`done`), kept as the answer should no later query do better, its
/// stage `why` recorded with `output`; the reason it is asked again (`message`) as the failure
/// the repair is shown.
#[allow(clippy::too_many_arguments)]
fn kept_and_asked_again(
    trace: &mut Trace,
    step: Option<usize>,
    attempt: u32,
    why: &'static str,
    output: serde_json::Value,
    message: String,
    done: (String, ResultSet),
    kept: &mut Option<(u32, String, ResultSet, &'static str)>,
) -> (String, AskError) {
    kept_stage(trace, why, step, attempt, &done.0, output);
    let ended =
        AskError::Failed { attempts: attempt, sqlstate: SqlState::or_internal("02000"), message: message.clone(), sql: done.0.clone() };
    *kept = Some((attempt, done.0, done.1, why));
    (message, ended)
}

/// The stages that keep rows while a query is asked again for what the question names or does
/// not ask for ([`super::unasked`]), or for the shape it asks ([`super::shape`]).
const ASKED_FOR_WORDS: [&str; 4] = [stage::QUOTED, stage::NAMED_VALUE, stage::UNASKED, stage::SHAPE];

/// The rows kept for a value they left out or added ([`kept_nothing`]), and only those.
fn kept_quoted(
    trace: &mut Trace,
    step: Option<usize>,
    kept: &mut Option<(u32, String, ResultSet, &'static str)>,
) -> Option<(String, ResultSet)> {
    if kept.as_ref().is_some_and(|k| ASKED_FOR_WORDS.contains(&k.3)) {
        kept_nothing(trace, step, kept)
    } else {
        None
    }
}

/// The stage `why` of the query `sql` that `attempt` ran, with `output`.
fn kept_stage(trace: &mut Trace, why: &'static str, step: Option<usize>, attempt: u32, sql: &str, output: serde_json::Value) {
    let mut st = StageTrace::new(why, with_step(json!({"sql": sql}), step));
    st.attempt = Some(attempt);
    st.output = output;
    trace.push(st);
}

/// `req` under the grammar once it came in (`constraint`), unless it carries one already.
fn carrying(req: crate::llm::ChatRequest, constraint: &Option<Constraint>) -> crate::llm::ChatRequest {
    match (constraint, &req.constraint) {
        (Some(c), None) => req.constrain(c.clone()),
        _ => req,
    }
}

/// The statement of a reply, parsed once by the guard; a metric, filter or dimension written
/// by its name is written in as its checked expression (only the items of the tables the tree
/// reads), and the statement that makes is checked as a new one. `None`: no SQL in the reply.
fn statement_of<'t>(
    host: &mut dyn Host,
    trace: &mut Trace,
    question: &str,
    reply: &str,
    offered: &[&crate::knowledge::Item],
    columns: &[String],
    tables: &dyn Fn() -> &'t [crate::schema::Table],
) -> Option<(String, Verdict)> {
    let mut sql = extract_sql(reply)?;
    // A follow-up that names a value in place of the turn before's, answered with both.
    let follows = match &trace.reading {
        Some(crate::conversation::Reading::Rewritten { edits_sql: Some(previous), .. }) => Some(previous.clone()),
        _ => None,
    };
    if let Some(previous) = follows {
        if let Some((one, replaced)) = crate::conversation::replaced_not_added(&trace.question, &previous, &sql) {
            let mut st = StageTrace::new(stage::REPLACED, json!({"sql": sql, "asked": trace.question}));
            st.output = json!({"replaced": replaced});
            // The turn keeps a question that says what its SQL asks, for the turns after it.
            if let Some(crate::conversation::Reading::Rewritten { standalone, .. }) = &mut trace.reading {
                for r in &replaced {
                    if let Some(text) = crate::conversation::without_values(standalone, &r.dropped, &r.kept) {
                        st.output["standalone"] = json!(text);
                        *standalone = text;
                    }
                }
            }
            trace.push(st);
            sql = one;
        }
    }
    // A year the question names, compared as one of its days: written as the year.
    if let Some((wider, widened)) = super::whole_year::widen(question, &sql) {
        let mut st = StageTrace::new(stage::WHOLE_YEAR, json!({"sql": sql}));
        st.output = json!({"widened": widened.iter().map(|w| json!({"from": w.from, "to": w.to})).collect::<Vec<_>>()});
        trace.push(st);
        sql = wider;
    }
    let verdict = Verdict::of(&sql);
    // What the statement's names stand for, asked only when an item could be written in.
    let nameable = offered.iter().any(|it| it.kind.is_some_and(|k| k.is_named_expression()));
    let reads = if nameable { host.resolve_relations(&verdict.reads()) } else { Vec::new() };
    let e = crate::knowledge::expand(&sql, &reads, offered, columns);
    let (sql, verdict) = if e.expanded.is_empty() {
        (sql, verdict)
    } else {
        for id in e.expanded {
            if !trace.knowledge_expanded.contains(&id) {
                trace.knowledge_expanded.push(id);
            }
        }
        let again = Verdict::of(&e.sql);
        (e.sql, again)
    };
    Some(as_meant(trace, sql, verdict, tables))
}

/// The statement with what a result never means written as it is meant, each before the guard
/// and recorded as its stage: a division of two integers made exact ([`super::fraction`]), the
/// first rows of a descending sort without NULL ([`super::nulls_last`]), a range of month or
/// weekday names compared by their place in the calendar ([`super::calendar`]), a join that only
/// multiplies rows as the `EXISTS` it also is ([`super::fan_out`]). A change whose statement
/// would not pass the guard is not made.
fn as_meant<'t>(trace: &mut Trace, sql: String, verdict: Verdict, tables: &dyn Fn() -> &'t [crate::schema::Table]) -> (String, Verdict) {
    let (sql, verdict) = rewritten(trace, stage::FRACTION, sql, verdict, |text, tree| super::fraction::as_fraction(text, tree, tables));
    let (sql, verdict) = rewritten(trace, stage::NULLS_LAST, sql, verdict, super::nulls_last::top_without_null);
    let (sql, verdict) = rewritten(trace, stage::CALENDAR, sql, verdict, super::calendar::ranges);
    rewritten(trace, stage::FAN_OUT, sql, verdict, |text, tree| super::fan_out::as_exists(text, tree, tables))
}

/// `sql` as `rewrite` writes it from its located tree, checked again by the guard; the `stage`
/// records what changed (`changed`: the divisions or sort keys as written).
fn rewritten(
    trace: &mut Trace,
    stage: &'static str,
    sql: String,
    verdict: Verdict,
    rewrite: impl FnOnce(&str, &sqlparser::ast::Statement) -> Option<(String, Vec<String>)>,
) -> (String, Verdict) {
    let Some((written, tree)) = verdict.located() else { return (sql, verdict) };
    let Some((changed, what)) = rewrite(written, tree) else { return (sql, verdict) };
    let again = Verdict::of(&changed);
    if !again.allowed() {
        return (sql, verdict);
    }
    let mut st = StageTrace::new(stage, json!({"sql": sql}));
    st.output = json!({"changed": what, "sql": changed});
    trace.push(st);
    (changed, again)
}

/// The query that ran, or the winner of a vote among it and candidates drawn from `req` when
/// `ask.candidates` asks for more than one ([`super::vote`]).
#[allow(clippy::too_many_arguments)]
fn vote<'t>(
    host: &mut dyn Host,
    trace: &mut Trace,
    req: &crate::llm::ChatRequest,
    cfg: &AskConfig,
    attempt: u32,
    step: Option<usize>,
    first: (String, ResultSet),
    question: &str,
    offered: &[&crate::knowledge::Item],
    columns: &[String],
    tables: &dyn Fn() -> &'t [crate::schema::Table],
) -> Result<(String, ResultSet), AskError> {
    if cfg.candidates < 2 {
        return Ok(first);
    }
    let mut statement =
        |host: &mut dyn Host, trace: &mut Trace, reply: &str| statement_of(host, trace, question, reply, offered, columns, tables);
    super::vote::choose(host, trace, req, cfg.candidates, cfg.max_prompt_tokens, attempt, step, first, &mut statement)
}

/// Whether a query that ended as `e` is one the SQL grammar rules out: no SQL, a statement the
/// guard or the database refused, one that does not parse, names a relation, column or
/// function that does not exist, leaves a column ungrouped, mixes types or writes a literal
/// of the wrong form (SQLSTATE class 42 but a missing privilege, 22P02, 22007, 22008, 21000).
pub fn grammar_rules_out(e: &AskError) -> bool {
    match e {
        AskError::NoSql { .. } | AskError::Refused { .. } => true,
        AskError::Failed { sqlstate, .. } => {
            (sqlstate.class() == "42" && *sqlstate != SqlState::INSUFFICIENT_PRIVILEGE)
                || matches!(sqlstate.as_str(), "22P02" | "22007" | "22008" | "21000")
        }
        _ => false,
    }
}

/// The SQL grammar of the tables `schema` describes, recorded in the trace with its size and
/// build time.
fn grammar_for(trace: &mut Trace, schema: &str, step: Option<usize>) -> Option<String> {
    let t = Instant::now();
    let tables = crate::schema::parse_rendered(schema);
    let built = sql_grammar(&tables, GrammarOptions::default());
    let mut st = StageTrace::new(stage::GRAMMAR, with_step(json!({"tables": tables.len()}), step));
    st.output = match &built {
        Some(g) => json!({"branches": g.branches, "rules": g.rules, "bytes": g.text.len()}),
        None => json!({"built": false}),
    };
    st.ms = ms_since(t);
    trace.push(st);
    built.map(|g| g.text)
}

/// `sql` with every run of white space made one space, for comparing statements.
fn fold_space(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `e` as it stands after `attempts` attempts.
fn with_attempts(e: AskError, attempts: u32) -> AskError {
    match e {
        AskError::NoSql { reply, .. } => AskError::NoSql { attempts, reply },
        AskError::Refused { reason, sql, .. } => AskError::Refused { attempts, reason, sql },
        AskError::Failed { sqlstate, message, sql, .. } => AskError::Failed { attempts, sqlstate, message, sql },
        other => other,
    }
}
