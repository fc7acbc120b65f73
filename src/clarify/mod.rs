//! Finding what the value memory reads two ways in a question, for `ask.clarify`: phrases of
//! the question held exactly in two readable indexed columns that no foreign key joins, and
//! abbreviations held in one column that the memory's lexical rule also reads as a value of
//! another ("LA": a state code, and Los Angeles).

use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;

use pg_ask_core::clarify::{is_abbreviation, phrases, Ambiguity, Named, Reading};
use pg_ask_core::values::literals::{LiteralKind, LiteralRef, QualifiedName, TextRange};

use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;

#[cfg(any(test, feature = "pg_test"))]
mod tests;

/// A readable indexed column of the value memory.
struct Column {
    id: i64,
    relid: pg_sys::Oid,
    attnum: i16,
    schema: String,
    table: String,
    column: String,
    /// Every column of the table.
    table_columns: Vec<String>,
}

impl Column {
    /// The table as a description writes it.
    fn qualified(&self) -> String {
        format!("{}.{}", pg_ask_core::sqltext::quote_ident(&self.schema), pg_ask_core::sqltext::quote_ident(&self.table))
    }

    fn reading(&self, value: String) -> Reading {
        Reading { value, table: self.qualified(), column: self.column.clone(), table_columns: self.table_columns.clone() }
    }

    fn probe(&self, text: &str) -> LiteralRef {
        LiteralRef {
            range: TextRange { start: 0, end: 0 },
            value: text.to_string(),
            kind: LiteralKind::Eq,
            table: QualifiedName::new(self.schema.clone(), self.table.clone()),
            column: self.column.clone(),
        }
    }
}

/// The indexed columns of the value memory that the caller may read.
fn readable_columns() -> Vec<Column> {
    // SAFETY: reads the backend's current user id.
    let caller = unsafe { pg_sys::GetUserId() };
    let args: [DatumWithOid; 1] = [caller.into()];
    as_memory_owner(|| {
        crate::pg::spi::select_rows(
            "SELECT vc.id, vc.relid, vc.attnum, n.nspname::text, c.relname::text, a.attname::text, vc.allow_rls,
                    ARRAY(SELECT t.attname::text FROM pg_catalog.pg_attribute t
                          WHERE t.attrelid = vc.relid AND t.attnum > 0 AND NOT t.attisdropped ORDER BY t.attnum)
             FROM ask.value_columns vc
             JOIN pg_catalog.pg_class c ON c.oid = vc.relid
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             JOIN pg_catalog.pg_attribute a ON a.attrelid = vc.relid AND a.attnum = vc.attnum AND NOT a.attisdropped
             WHERE pg_catalog.has_column_privilege($1, vc.relid, vc.attnum, 'SELECT')
             ORDER BY vc.id",
            &args,
            |r| {
                // Values of a table whose policies hide rows from the caller stay unread,
                // unless its owner opted in.
                let (Some(relid), Some(allow_rls)) = (r.get::<pg_sys::Oid>(2)?, r.get::<bool>(7)?) else { return Ok(None) };
                if !allow_rls && crate::values::rls_hides(relid, caller) {
                    return Ok(None);
                }
                let (Some(id), Some(attnum), Some(schema), Some(table), Some(column)) =
                    (r.get::<i64>(1)?, r.get::<i16>(3)?, r.get::<String>(4)?, r.get::<String>(5)?, r.get::<String>(6)?)
                else {
                    return Ok(None);
                };
                Ok(Some(Column { id, relid, attnum, schema, table, column, table_columns: r.get::<Vec<String>>(8)?.unwrap_or_default() }))
            },
        )
    })
    .or_raise("could not read the value memory's columns")
}

/// A column of a relation, as pg_constraint and pg_attribute number it.
type ColumnRef = (pg_sys::Oid, i16);

/// The pairs of (relation, column) that single-column foreign keys join among `columns`, read
/// once per question (one value in two such columns is one thing).
fn foreign_keys(columns: &[Column]) -> Vec<(ColumnRef, ColumnRef)> {
    let rels: Vec<pg_sys::Oid> = columns.iter().map(|c| c.relid).collect();
    crate::pg::spi::select_rows(
        "SELECT conrelid, conkey[1], confrelid, confkey[1] FROM pg_catalog.pg_constraint
         WHERE contype = 'f' AND pg_catalog.array_length(conkey, 1) = 1
           AND conrelid = ANY ($1) AND confrelid = ANY ($1)",
        &[rels.into()],
        |r| {
            let (Some(a), Some(b), Some(c), Some(d)) =
                (r.get::<pg_sys::Oid>(1)?, r.get::<i16>(2)?, r.get::<pg_sys::Oid>(3)?, r.get::<i16>(4)?)
            else {
                return Ok(None);
            };
            Ok(Some(((a, b), (c, d))))
        },
    )
    .or_raise("could not read the foreign keys")
}

/// Whether a foreign key of `fks` joins the two columns.
fn joined(fks: &[(ColumnRef, ColumnRef)], a: &Column, b: &Column) -> bool {
    let (x, y) = ((a.relid, a.attnum), (b.relid, b.attnum));
    fks.iter().any(|&(f, t)| (f == x && t == y) || (f == y && t == x))
}

/// The phrases of a question the value memory holds, among the columns of some tables.
struct Held {
    /// The readable indexed columns of the tables.
    columns: Vec<Column>,
    /// The question's phrases, as it writes them.
    phrases: Vec<String>,
    /// The same, lower-cased.
    lowered: Vec<String>,
    /// The memory's values equal to a phrase, any case: (column id, value, value lower-cased),
    /// most frequent first per column.
    hits: Vec<(i64, String, String)>,
}

/// What the value memory holds of `question`'s phrases in the readable indexed columns of
/// `tables` (described tables, qualified as a description writes them).
fn held_phrases(question: &str, tables: &[String]) -> Result<Held, String> {
    let mut columns = readable_columns();
    columns.retain(|c| tables.contains(&c.qualified()));
    let phrases = phrases(question);
    let lowered: Vec<String> = phrases.iter().map(|p| p.to_lowercase()).collect();
    if columns.is_empty() || phrases.is_empty() {
        return Ok(Held { columns, phrases, lowered, hits: Vec::new() });
    }
    let ids: Vec<i64> = columns.iter().map(|c| c.id).collect();
    let args: [DatumWithOid; 2] = [ids.into(), lowered.clone().into()];
    let hits: Vec<(i64, String, String)> = as_memory_owner(|| {
        crate::pg::spi::select_rows(
            "SELECT m.column_id, m.value, pg_catalog.lower(m.value) COLLATE \"C\"
             FROM ask.value_memory m
             WHERE m.column_id = ANY ($1) AND pg_catalog.lower(m.value) COLLATE \"C\" = ANY ($2::text[])
             ORDER BY m.column_id, m.frequency DESC",
            &args,
            |r| {
                let (Some(id), Some(value), Some(lower)) = (r.get::<i64>(1)?, r.get::<String>(2)?, r.get::<String>(3)?) else {
                    return Ok(None);
                };
                Ok(Some((id, value, lower)))
            },
        )
    })
    .or_raise("could not read the value memory");
    Ok(Held { columns, phrases, lowered, hits })
}

/// The phrases of `question` the value memory holds exactly, any case, in a readable indexed
/// column of `tables`, as the question writes them, longest first, each with the columns that
/// hold it; a phrase inside a longer one held ("York" of "New York") is left out.
pub(crate) fn named_values(question: &str, tables: &[String]) -> Result<Vec<Named>, String> {
    let Held { columns, phrases, lowered, hits } = held_phrases(question, tables)?;
    let mut out: Vec<Named> = Vec::new();
    let mut covered: Vec<&str> = Vec::new();
    for (phrase, low) in phrases.iter().zip(&lowered) {
        if covered.iter().any(|c| c.contains(low.as_str())) {
            continue;
        }
        let mut readings: Vec<Reading> = Vec::new();
        let mut seen: Vec<i64> = Vec::new();
        for (cid, value, _) in hits.iter().filter(|(_, _, l)| l == low) {
            if let Some(col) = columns.iter().find(|c| c.id == *cid).filter(|_| !seen.contains(cid)) {
                seen.push(*cid);
                readings.push(col.reading(value.clone()));
            }
        }
        if !readings.is_empty() {
            covered.push(low);
            out.push(Named { phrase: phrase.clone(), readings });
        }
    }
    Ok(out)
}

/// The ambiguities of `question` the value memory shows among the columns of `tables` (the
/// described tables, qualified as a description writes them).
pub(crate) fn ambiguities(question: &str, tables: &[String]) -> Result<Vec<Ambiguity>, String> {
    let Held { columns, phrases, lowered, hits } = held_phrases(question, tables)?;
    if columns.is_empty() {
        return Ok(Vec::new());
    }
    let fks = foreign_keys(&columns);
    let mut out: Vec<Ambiguity> = Vec::new();
    let mut covered: Vec<String> = Vec::new();
    for (phrase, low) in phrases.iter().zip(&lowered) {
        // A phrase inside one already found ambiguous ("York" of "New York") is not asked again.
        if covered.iter().any(|c| c.contains(low.as_str())) {
            continue;
        }
        let mut held: Vec<(&Column, String)> = Vec::new();
        for (cid, value, l) in &hits {
            if l == low && !held.iter().any(|(c, _)| c.id == *cid) {
                if let Some(col) = columns.iter().find(|c| c.id == *cid) {
                    held.push((col, value.clone()));
                }
            }
        }
        if held.is_empty() {
            continue;
        }
        // The same words held in columns that are not one thing through a foreign key.
        let mut distinct: Vec<(&Column, String)> = Vec::new();
        for (col, value) in held {
            if !distinct.iter().any(|(d, _)| joined(&fks, d, col)) {
                distinct.push((col, value));
            }
        }
        if distinct.len() >= 2 {
            out.push(Ambiguity {
                phrase: phrase.clone(),
                readings: distinct.into_iter().map(|(c, v)| c.reading(v)).collect(),
                why: "same_value_in_two_columns",
            });
            covered.push(low.clone());
            continue;
        }
        if !is_abbreviation(phrase) {
            continue;
        }
        // An abbreviation held in one column, and read by the lexical rule in another.
        let (home, value) = &distinct[0];
        let mut readings: Vec<Reading> = Vec::new();
        for other in columns.iter().filter(|c| c.id != home.id && !joined(&fks, c, home)) {
            pgrx::check_for_interrupts!();
            if let Some(v) = crate::values::correct::lexical_reading(&other.probe(phrase), phrase) {
                readings.push(other.reading(v));
            }
        }
        if !readings.is_empty() {
            readings.push(home.reading(value.clone()));
            out.push(Ambiguity { phrase: phrase.clone(), readings, why: "abbreviation" });
            covered.push(low.clone());
        }
    }
    Ok(out)
}
