//! The capture trigger: every INSERT, UPDATE and DELETE of a shadowed table, written to
//! `ask.shadow_log` on the write path of the user's table (see the module above for how it
//! keeps that cheap), and TRUNCATE forgetting the table's log.

use crate::pg::backend::{self, Column, Deformed, Kind, RowPlan};
use crate::pg::errors::raise;
use crate::pg::identity::as_memory_owner;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::pg_sys::errcodes::PgSqlErrorCode;
use pgrx::prelude::*;
use pgrx::{AllocatedByPostgres, PgTrigger};

extern "C-unwind" {
    // commands/sequence.c; not in pgrx's bindings.
    fn nextval_internal(relid: pg_sys::Oid, check_permissions: bool) -> i64;
    // catalog/partition.c
    fn get_partition_ancestors(relid: pg_sys::Oid) -> *mut pg_sys::List;
}

impl Deformed {
    unsafe fn deform(&mut self, tuple: pg_sys::HeapTuple, tupdesc: pg_sys::TupleDesc) {
        let natts = (*tupdesc).natts as usize;
        self.values.resize(natts, pg_sys::Datum::from(0));
        self.nulls.resize(natts, false);
        pg_sys::heap_deform_tuple(tuple, tupdesc, self.values.as_mut_ptr(), self.nulls.as_mut_ptr());
    }
}

pub(crate) unsafe fn shape_of(tupdesc: pg_sys::TupleDesc) -> Vec<(pg_sys::Oid, bool)> {
    let natts = (*tupdesc).natts as usize;
    (0..natts)
        .map(|i| {
            let a = &*(*tupdesc).attrs.as_ptr().add(i);
            (a.atttypid, a.attisdropped)
        })
        .collect()
}

impl RowPlan {
    /// Whether the plan was made for this column shape (no allocation: checked on every row).
    unsafe fn fits(&self, tupdesc: pg_sys::TupleDesc) -> bool {
        let natts = (*tupdesc).natts as usize;
        natts == self.shape.len()
            && self.shape.iter().enumerate().all(|(i, &(typid, dropped))| {
                let a = &*(*tupdesc).attrs.as_ptr().add(i);
                a.atttypid == typid && a.attisdropped == dropped
            })
    }
}

pub(crate) unsafe fn plan_for(tupdesc: pg_sys::TupleDesc) -> RowPlan {
    let shape = shape_of(tupdesc);
    let scratch = |columns| RowPlan {
        shape: shape.clone(),
        columns,
        key_order: Vec::new(),
        old: Deformed::default(),
        new: Deformed::default(),
        changed: Vec::new(),
        pairs: Vec::new(),
    };
    let mut columns = Vec::with_capacity(shape.len());
    for i in 0..shape.len() {
        let a = &*(*tupdesc).attrs.as_ptr().add(i);
        let kind = if a.attisdropped {
            Kind::Dropped
        } else {
            match a.atttypid {
                pg_sys::NUMERICOID => Kind::Numeric,
                pg_sys::INT2OID => Kind::Int2,
                pg_sys::INT4OID => Kind::Int4,
                pg_sys::INT8OID => Kind::Int8,
                pg_sys::BOOLOID => Kind::Bool,
                pg_sys::TEXTOID | pg_sys::VARCHAROID => Kind::Text,
                t @ (pg_sys::DATEOID | pg_sys::TIMESTAMPOID | pg_sys::TIMESTAMPTZOID) => Kind::DateTime(t),
                t @ (pg_sys::BPCHAROID | pg_sys::UUIDOID | pg_sys::FLOAT4OID | pg_sys::FLOAT8OID) => {
                    let mut outfn = pg_sys::InvalidOid;
                    let mut varlena = false;
                    pg_sys::getTypeOutputInfo(t, &mut outfn, &mut varlena);
                    Kind::Out { outfn, numeric: matches!(t, pg_sys::FLOAT4OID | pg_sys::FLOAT8OID) }
                }
                _ => return scratch(None),
            }
        };
        let name = std::ffi::CStr::from_ptr(a.attname.data.as_ptr()).to_owned();
        columns.push(Column { name, kind, byval: a.attbyval, len: a.attlen });
    }
    // jsonb's key order (lengthCompareJsonbStringValue); names are unique within a row type.
    let mut key_order: Vec<usize> = (0..columns.len()).filter(|&i| !matches!(columns[i].kind, Kind::Dropped)).collect();
    key_order.sort_by(|&a, &b| {
        let (a, b) = (columns[a].name.as_bytes(), columns[b].name.as_bytes());
        a.len().cmp(&b.len()).then_with(|| a.cmp(b))
    });
    RowPlan { key_order, ..scratch(Some(columns)) }
}

pub(crate) fn jsonb_string(ptr: *mut std::ffi::c_char, len: usize) -> pg_sys::JsonbValue {
    pg_sys::JsonbValue {
        type_: pg_sys::jbvType::jbvString,
        val: pg_sys::JsonbValue__bindgen_ty_1 { string: pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_1 { len: len as i32, val: ptr } },
    }
}

pub(crate) fn jsonb_numeric(n: pg_sys::Numeric) -> pg_sys::JsonbValue {
    pg_sys::JsonbValue { type_: pg_sys::jbvType::jbvNumeric, val: pg_sys::JsonbValue__bindgen_ty_1 { numeric: n } }
}

/// NaN, Infinity or -Infinity (`NUMERIC_IS_SPECIAL`: the header's two sign bits both set).
/// `n` is an untoasted numeric with a 4-byte varlena header.
pub(crate) unsafe fn numeric_is_special(n: pg_sys::Numeric) -> bool {
    const NUMERIC_SIGN_MASK: u16 = 0xC000;
    const NUMERIC_SPECIAL: u16 = 0xC000;
    let header = std::ptr::read_unaligned((n as *const u8).add(pg_sys::VARHDRSZ) as *const u16);
    header & NUMERIC_SIGN_MASK == NUMERIC_SPECIAL
}

/// One column's value as a jsonb scalar.
pub(crate) unsafe fn column_value(kind: Kind, d: pg_sys::Datum) -> pg_sys::JsonbValue {
    use pgrx::varlena::{varatt_is_1b_e, varatt_is_4b_c, varatt_is_4b_u};
    match kind {
        Kind::Numeric => {
            let v = d.cast_mut_ptr::<pg_sys::varlena>();
            let n = if varatt_is_4b_u(v) { v } else { pg_sys::pg_detoast_datum(v) } as pg_sys::Numeric;
            if numeric_is_special(n) {
                // Not a JSON number: to_jsonb writes its text.
                let s = pg_sys::OidOutputFunctionCall(pg_sys::Oid::from(pg_sys::F_NUMERIC_OUT), pg_sys::Datum::from(n));
                jsonb_string(s, std::ffi::CStr::from_ptr(s).to_bytes().len())
            } else {
                jsonb_numeric(n)
            }
        }
        Kind::Int2 => jsonb_numeric(pg_sys::int64_to_numeric(d.value() as i16 as i64)),
        Kind::Int4 => jsonb_numeric(pg_sys::int64_to_numeric(d.value() as i32 as i64)),
        Kind::Int8 => jsonb_numeric(pg_sys::int64_to_numeric(d.value() as i64)),
        Kind::Bool => {
            pg_sys::JsonbValue { type_: pg_sys::jbvType::jbvBool, val: pg_sys::JsonbValue__bindgen_ty_1 { boolean: d.value() != 0 } }
        }
        Kind::Text => {
            // pg_detoast_datum_packed: only compressed or out-of-line values need work.
            let mut v = d.cast_mut_ptr::<pg_sys::varlena>();
            if varatt_is_4b_c(v) || varatt_is_1b_e(v) {
                v = pg_sys::pg_detoast_datum_packed(v);
            }
            jsonb_string(pgrx::varlena::vardata_any(v) as *mut _, pgrx::varlena::varsize_any_exhdr(v))
        }
        Kind::DateTime(typid) => {
            let s = pg_sys::JsonEncodeDateTime(std::ptr::null_mut(), d, typid, std::ptr::null());
            jsonb_string(s, std::ffi::CStr::from_ptr(s).to_bytes().len())
        }
        Kind::Out { outfn, numeric } => {
            let s = pg_sys::OidOutputFunctionCall(outfn, d);
            let text = std::ffi::CStr::from_ptr(s).to_str().unwrap_or("");
            if numeric && text.parse::<f64>().is_ok_and(f64::is_finite) {
                let n = pg_sys::OidInputFunctionCall(pg_sys::Oid::from(pg_sys::F_NUMERIC_IN), s, pg_sys::InvalidOid, -1);
                jsonb_numeric(n.cast_mut_ptr())
            } else {
                jsonb_string(s, text.len())
            }
        }
        Kind::Dropped => unreachable!("dropped columns are skipped"),
    }
}

/// A row's columns as jsonb (those `include` accepts), the same value `to_jsonb` gives: the
/// object's pairs are laid out in jsonb key order and converted in one call (what
/// pushJsonbValue would do after sorting them).
pub(crate) unsafe fn build_jsonb(
    cols: &[Column],
    key_order: &[usize],
    row: &Deformed,
    pairs: &mut Vec<pg_sys::JsonbPair>,
    include: impl Fn(usize) -> bool,
) -> pg_sys::Datum {
    pairs.clear();
    for &i in key_order {
        if !include(i) {
            continue;
        }
        let name = &cols[i].name;
        let value = if row.nulls[i] {
            pg_sys::JsonbValue { type_: pg_sys::jbvType::jbvNull, val: pg_sys::JsonbValue__bindgen_ty_1 { boolean: false } }
        } else {
            column_value(cols[i].kind, row.values[i])
        };
        pairs.push(pg_sys::JsonbPair {
            key: jsonb_string(name.as_ptr() as *mut _, name.as_bytes().len()),
            value,
            order: pairs.len() as u32,
        });
    }
    let mut object = pg_sys::JsonbValue {
        type_: pg_sys::jbvType::jbvObject,
        val: pg_sys::JsonbValue__bindgen_ty_1 {
            object: pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_3 { nPairs: pairs.len() as i32, pairs: pairs.as_mut_ptr() },
        },
    };
    pg_sys::Datum::from(pg_sys::JsonbValueToJsonb(&mut object))
}

/// `datumIsEqual` (utils/adt/datum.c): the same bytes.
pub(crate) unsafe fn same_datum(a: pg_sys::Datum, b: pg_sys::Datum, byval: bool, len: i16) -> bool {
    if byval {
        return a == b;
    }
    let size = |d: pg_sys::Datum| match len {
        n if n > 0 => n as usize,
        -1 => pgrx::varlena::varsize_any(d.cast_mut_ptr()),
        _ => std::ffi::CStr::from_ptr(d.cast_mut_ptr()).to_bytes_with_nul().len(),
    };
    let n = size(a);
    n == size(b) && std::slice::from_raw_parts(a.cast_mut_ptr::<u8>(), n) == std::slice::from_raw_parts(b.cast_mut_ptr::<u8>(), n)
}

/// Whether attribute number `attnum` is in a bitmap of `RelationGetIndexAttrBitmap` (members
/// offset by `FirstLowInvalidHeapAttributeNumber`), read without a call per column.
pub(crate) unsafe fn in_attr_bitmap(bms: *const pg_sys::Bitmapset, attnum: i32) -> bool {
    if bms.is_null() {
        return false;
    }
    let x = (attnum - pg_sys::FirstLowInvalidHeapAttributeNumber) as usize;
    let bits = pg_sys::BITS_PER_BITMAPWORD as usize;
    let word = x / bits;
    word < (*bms).nwords as usize && ((*bms).words.as_slice((*bms).nwords as usize)[word] >> (x % bits)) & 1 == 1
}

/// The row images of a change as jsonb: (old, new). Rows whose columns are all of common
/// scalar types are built directly (column kinds worked out once per row type); others go
/// through `to_jsonb` whole. On the direct path an UPDATE keeps, in the old image, the
/// primary key and the columns that changed, and in the new image the columns that changed
/// (whole rows when nothing changed, or when the table has no primary key for the old one).
pub(crate) unsafe fn row_images(
    rel: pg_sys::Relation,
    old: Option<pg_sys::HeapTuple>,
    new: Option<pg_sys::HeapTuple>,
) -> (Option<pg_sys::Datum>, Option<pg_sys::Datum>) {
    let tupdesc = (*rel).rd_att;
    let typid = (*tupdesc).tdtypeid;
    let fast = backend::with(|b| {
        let mut plans = b.row_plans.borrow_mut();
        let plan = plans.entry(typid).or_insert_with(|| plan_for(tupdesc));
        if !plan.fits(tupdesc) {
            *plan = plan_for(tupdesc);
        }
        let RowPlan { columns, key_order, old: old_row, new: new_row, changed, pairs, .. } = plan;
        let cols = columns.as_ref()?;
        let mut image = |t: pg_sys::HeapTuple, row: &mut Deformed| {
            row.deform(t, tupdesc);
            build_jsonb(cols, key_order, row, pairs, |_| true)
        };
        Some(match (old, new) {
            (Some(o), Some(n)) => {
                old_row.deform(o, tupdesc);
                new_row.deform(n, tupdesc);
                let (ov, nv) = (&*old_row, &*new_row);
                // Each column compared once per row, for both images.
                changed.clear();
                changed.extend((0..cols.len()).map(|i| {
                    nv.nulls[i] != ov.nulls[i] || (!nv.nulls[i] && !same_datum(nv.values[i], ov.values[i], cols[i].byval, cols[i].len))
                }));
                let any_changed = changed.contains(&true);
                let pk = pg_sys::RelationGetIndexAttrBitmap(rel, pg_sys::IndexAttrBitmapKind::INDEX_ATTR_BITMAP_PRIMARY_KEY);
                let old_image = build_jsonb(cols, key_order, ov, pairs, |i| pk.is_null() || changed[i] || in_attr_bitmap(pk, i as i32 + 1));
                let new_image = build_jsonb(cols, key_order, nv, pairs, |i| !any_changed || changed[i]);
                (Some(old_image), Some(new_image))
            }
            (Some(o), None) => (Some(image(o, old_row)), None),
            (None, n) => (None, n.map(|n| image(n, new_row))),
        })
    });
    match fast {
        Some(images) => images,
        None => (old.map(|t| row_to_jsonb_generic(t, tupdesc)), new.map(|t| row_to_jsonb_generic(t, tupdesc))),
    }
}

/// `to_jsonb(row)` for a row of `typid`. `to_jsonb` reads its argument's type from the call's
/// expression, so the call info carries a `to_jsonb($row::typid)` expression.
pub(crate) unsafe fn row_to_jsonb_generic(tuple: pg_sys::HeapTuple, tupdesc: pg_sys::TupleDesc) -> pg_sys::Datum {
    let typid = (*tupdesc).tdtypeid;
    let finfo = backend::with(|b| {
        *b.to_jsonb.borrow_mut().entry(typid).or_insert_with(|| {
            let top = pg_sys::TopMemoryContext;
            let old = pg_sys::MemoryContextSwitchTo(top);
            let finfo = pg_sys::palloc0(std::mem::size_of::<pg_sys::FmgrInfo>()) as *mut pg_sys::FmgrInfo;
            pg_sys::fmgr_info_cxt(pg_sys::Oid::from(pg_sys::F_TO_JSONB), finfo, top);
            let arg = pg_sys::makeNullConst(typid, -1, pg_sys::InvalidOid);
            let args = pg_sys::lappend(std::ptr::null_mut(), arg.cast());
            let expr = pg_sys::makeFuncExpr(
                pg_sys::Oid::from(pg_sys::F_TO_JSONB),
                pg_sys::JSONBOID,
                args,
                pg_sys::InvalidOid,
                pg_sys::InvalidOid,
                pg_sys::CoercionForm::COERCE_EXPLICIT_CALL,
            );
            (*finfo).fn_expr = expr.cast();
            pg_sys::MemoryContextSwitchTo(old);
            finfo
        })
    });
    let row = pg_sys::heap_copy_tuple_as_datum(tuple, tupdesc);
    pg_sys::FunctionCall1Coll(finfo, pg_sys::InvalidOid, row)
}

/// The oid of a relation of the extension's schema.
pub(crate) fn ask_relid(name: &std::ffi::CStr) -> pg_sys::Oid {
    // SAFETY: catalog lookups by name.
    unsafe {
        let nsp = pg_sys::get_namespace_oid(c"ask".as_ptr(), false);
        let relid = pg_sys::get_relname_relid(name.as_ptr(), nsp);
        if relid == pg_sys::InvalidOid {
            raise(
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!("ask.{} is missing", name.to_string_lossy()),
                "Reinstall the extension.",
            );
        }
        relid
    }
}

/// (ask.shadow_log, ask.shadow_log_seq).
pub(crate) fn log_relids() -> (pg_sys::Oid, pg_sys::Oid) {
    backend::with(|b| {
        let c = &b.shadow_log;
        c.get().unwrap_or_else(|| {
            let relids = (ask_relid(c"shadow_log"), ask_relid(c"shadow_log_seq"));
            c.set(Some(relids));
            relids
        })
    })
}

/// The table a change is logged under: a partition's changes belong to the partitioned table
/// that was shadowed (the root of its tree).
pub(crate) unsafe fn logged_relid(rel: pg_sys::Relation) -> pg_sys::Oid {
    let relid = (*rel).rd_id;
    if !(*(*rel).rd_rel).relispartition {
        return relid;
    }
    let ancestors = get_partition_ancestors(relid);
    if ancestors.is_null() || (*ancestors).length == 0 {
        return relid;
    }
    (*(*ancestors).elements.add((*ancestors).length as usize - 1)).oid_value
}

/// Whether `relid` is in `ask.shadow_tables`, looked up once per transaction.
fn shadowed(relid: pg_sys::Oid) -> bool {
    if crate::pg::spi::per_transaction(|facts| facts.shadowed.contains(&relid)) {
        return true;
    }
    let found = as_memory_owner(|| {
        Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT FROM ask.shadow_tables WHERE relid OPERATOR(pg_catalog.=) $1)",
            &[relid.into()],
        )
    });
    match found {
        Ok(Some(true)) => {
            crate::pg::spi::per_transaction(|facts| facts.shadowed.push(relid));
            true
        }
        Ok(_) => false,
        Err(e) => crate::pg::errors::internal("could not read ask.shadow_tables", e).raise(),
    }
}

/// The capture trigger (AFTER INSERT OR UPDATE OR DELETE ... FOR EACH ROW), installed by
/// `ask.shadow_enable()`.
#[pg_trigger]
pub(crate) fn _shadow_capture<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, std::convert::Infallible> {
    let td = trigger.trigger_data();
    let event = td.tg_event;
    let after_row = (event & pg_sys::TRIGGER_EVENT_ROW) != 0 && (event & pg_sys::TRIGGER_EVENT_TIMINGMASK) == pg_sys::TRIGGER_EVENT_AFTER;
    if !after_row {
        raise(
            PgSqlErrorCode::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
            "ask._shadow_capture() must run AFTER ... FOR EACH ROW",
            "Use ask.shadow_enable(table) to install it.",
        );
    }
    // SAFETY: the trigger manager hands us valid tuples and relation for the event; everything
    // allocated here lives in the trigger's per-row memory context.
    unsafe {
        let rel = td.tg_relation;
        let (op, old, new) = match event & pg_sys::TRIGGER_EVENT_OPMASK {
            pg_sys::TRIGGER_EVENT_INSERT => (b'I', None, Some(td.tg_trigtuple)),
            pg_sys::TRIGGER_EVENT_UPDATE => (b'U', Some(td.tg_trigtuple), Some(td.tg_newtuple)),
            pg_sys::TRIGGER_EVENT_DELETE => (b'D', Some(td.tg_trigtuple), None),
            _ => return Ok(None),
        };
        // Only for a table its owner shadowed: anybody may attach this trigger to a table of
        // its own, but not write into the log that every DROP then searches.
        let logged = logged_relid(rel);
        if !shadowed(logged) {
            raise(
                PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("{} is not shadowed", crate::pg::spi::relname(logged)),
                "ask.shadow_enable(table) installs the capture trigger, as the table's owner.",
            );
        }
        let (old, new) = row_images(rel, old, new);

        let (log_relid, seq_relid) = log_relids();
        let log = pg_sys::table_open(log_relid, pg_sys::RowExclusiveLock as i32);
        if (*(*log).rd_rel).relhasindex || (*(*log).rd_att).natts != 6 {
            pg_sys::table_close(log, pg_sys::RowExclusiveLock as i32);
            raise(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "ask.shadow_log has been altered (an index or a column was added)",
                "The capture trigger writes the log directly: drop the index, or reinstall the extension.",
            );
        }
        let seq = nextval_internal(seq_relid, false);
        let xid = pg_sys::GetTopFullTransactionId().value as i64;
        let mut values = [
            pg_sys::Datum::from(seq),
            pg_sys::Datum::from(xid),
            pg_sys::Datum::from(logged_relid(rel)),
            pg_sys::Datum::from(op as i8),
            old.unwrap_or(pg_sys::Datum::from(0)),
            new.unwrap_or(pg_sys::Datum::from(0)),
        ];
        let mut nulls = [false, false, false, false, old.is_none(), new.is_none()];
        let tuple = pg_sys::heap_form_tuple((*log).rd_att, values.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::simple_heap_insert(log, tuple);
        pg_sys::table_close(log, pg_sys::NoLock as i32);
    }
    Ok(None)
}

/// TRUNCATE empties the table: the changes before it no longer matter, and the log is again
/// complete from an empty table.
#[pg_trigger]
pub(crate) fn _shadow_truncated<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, std::convert::Infallible> {
    let rel = trigger.relid().unwrap_or_else(|e| crate::pg::errors::internal("a statement on pg_ask\'s tables failed", e).raise());
    if !shadowed(rel) {
        return Ok(None);
    }
    as_memory_owner(|| {
        Spi::run_with_args("DELETE FROM ask.shadow_log WHERE relid = $1", &[rel.into()]).ok();
        Spi::run_with_args("UPDATE ask.shadow_tables SET complete = true WHERE relid = $1", &[rel.into()]).ok();
    });
    Ok(None)
}
