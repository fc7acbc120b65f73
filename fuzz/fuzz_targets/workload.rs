//! InConDB workload translation: MySQL statements to PostgreSQL, and whole workload files.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::shadow::workload::{translate, Workload};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = translate(&text);
    // The file form: statements, and with a 0 byte a natural-language file beside them.
    let (sql, nl) = match text.split_once('\0') {
        Some((sql, nl)) => (sql, Some(nl)),
        None => (&*text, None),
    };
    if let Ok(workload) = Workload::from_text("fuzz", sql, nl) {
        let _ = workload.translation_counts();
    }
});
