//! The writes of the schema selection memory's stored lexical index: a stored table's words
//! (`ask.schema_memory_terms`, whose statement triggers keep `ask.schema_memory_vocabulary`)
//! and field lengths, and the notes of relations described again (`ask.schema_memory_dirty`).

use std::collections::HashMap;

use pg_ask_core::selection::lexical::FIELDS;
use pg_ask_core::selection::DocTerms;
use pgrx::datum::DatumWithOid;
use pgrx::pg_sys;
use pgrx::pg_sys::PgOid::BuiltIn;

use pg_sys::BuiltinOid::{INT4ARRAYOID, INT4OID, OIDARRAYOID, TEXTARRAYOID};

use crate::pg::identity::as_memory_owner;
use crate::pg::spi::OrRaise;

/// Forget the notes of touched relations that were described in the memory as they are now.
pub(super) fn forget_noted(relids: &[pg_sys::Oid]) -> Result<(), pgrx::spi::SpiError> {
    delete_relids(
        "forget relations described again",
        "DELETE FROM ask.schema_memory_dirty WHERE relid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[]) RETURNING relid",
        relids,
    )
}

/// Run `sql`, a DELETE of the rows of the relations `$1` (an oid array).
fn delete_relids(what: &'static str, sql: &str, relids: &[pg_sys::Oid]) -> Result<(), pgrx::spi::SpiError> {
    let args: [DatumWithOid; 1] = [relids.to_vec().into()];
    crate::pg::spi::write_kept(what, sql, &[BuiltIn(OIDARRAYOID)], &args, |_| Ok(Some(())))?;
    Ok(())
}

/// Write the words of stored tables into the lexical index: `keys` are the rows just stored
/// (by qualified name), `terms` gives each one's words. Replaces what the index held for them.
pub(super) fn store_terms(keys: &HashMap<String, pg_sys::Oid>, terms: &dyn Fn(&str) -> Option<DocTerms>) {
    let mut relids: Vec<pg_sys::Oid> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word_tables: Vec<pg_sys::Oid> = Vec::new();
    let mut tf: Vec<i32> = Vec::new();
    let mut lengths: Vec<i32> = Vec::new();
    for (name, key) in keys {
        let Some(t) = terms(name) else { continue };
        relids.push(*key);
        lengths.extend(t.lengths().iter().map(|&n| n as i32));
        for (w, counts) in t.terms() {
            words.push(w.clone());
            word_tables.push(*key);
            tf.extend(counts.iter().map(|&n| n as i32));
        }
    }
    if relids.is_empty() {
        return;
    }
    let n = FIELDS as i32;
    let all: Vec<pg_sys::Oid> = keys.values().copied().collect();
    as_memory_owner(|| {
        delete_relids(
            "forget the stored words",
            "DELETE FROM ask.schema_memory_terms WHERE relid OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.oid[]) RETURNING relid",
            &all,
        )?;
        // Described again: no longer behind the catalog.
        forget_noted(&all)?;
        let args: [DatumWithOid; 4] = [words.into(), word_tables.into(), tf.into(), n.into()];
        crate::pg::spi::write_kept(
            "store the words",
            "INSERT INTO ask.schema_memory_terms (term, relid, tf)
             SELECT u.t, u.r, $3[(u.i OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.*) $4 OPERATOR(pg_catalog.+) 1 : u.i OPERATOR(pg_catalog.*) $4]
               FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.text[]), pg_catalog.unnest($2::pg_catalog.oid[])) WITH ORDINALITY AS u(t, r, i)
             RETURNING relid",
            &[BuiltIn(TEXTARRAYOID), BuiltIn(OIDARRAYOID), BuiltIn(INT4ARRAYOID), BuiltIn(INT4OID)],
            &args,
            |_| Ok(Some(())),
        )?;
        let args: [DatumWithOid; 3] = [relids.into(), lengths.into(), n.into()];
        crate::pg::spi::write_kept(
            "store the field lengths",
            "UPDATE ask.schema_memory_tables m
                SET field_lengths = $2[(u.i OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.*) $3 OPERATOR(pg_catalog.+) 1 : u.i OPERATOR(pg_catalog.*) $3]
               FROM pg_catalog.unnest($1::pg_catalog.oid[]) WITH ORDINALITY AS u(r, i)
              WHERE m.relid OPERATOR(pg_catalog.=) u.r
             RETURNING m.relid",
            &[BuiltIn(OIDARRAYOID), BuiltIn(INT4ARRAYOID), BuiltIn(INT4OID)],
            &args,
            |_| Ok(Some(())),
        )?;
        Ok::<_, pgrx::spi::SpiError>(())
    })
    .or_raise("could not store the schema selection memory's lexical index");
}
