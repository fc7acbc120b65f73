//! Text from the database or a user made data in a prompt: one escaping, below every module
//! that builds a prompt or a part of one (the schema description, the prompts, conversations).

/// Text placed inside a data tag of a prompt, made unable to close it or the fenced block it
/// may sit in: `</` becomes `&lt;/`, and three backticks `&#96;&#96;&#96;` (a run of more
/// keeps fewer than three together). Nothing else changes, so SQL operators (`<`, `<>`) and a
/// single backtick reach the model as written, and a prompt whose data holds neither is the
/// same text as before. A cell holding `</result>` stays data.
///
/// The one escaping of pg_ask's prompts: every text from the database or a user goes through
/// it wherever a prompt is built: table, column and schema comments and the identifiers of a
/// description, stored values, questions (conversation turns and verified questions
/// included), SQL shown back to the model, error messages and result rows. It is idempotent:
/// text escaped twice reads as text escaped once.
pub fn data(text: &str) -> String {
    text.replace("</", "&lt;/").replace("```", "&#96;&#96;&#96;")
}
