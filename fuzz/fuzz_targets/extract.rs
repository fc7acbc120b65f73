//! SQL extraction from a model's reply: fences, tags, prose around the statement.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::extract;

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data);
    if let Some(sql) = extract::extract_sql(&reply) {
        let _ = extract::without_mysql_habits(&sql);
    }
    let _ = extract::strip_fences(&reply);
    for block in extract::fenced_blocks(&reply) {
        let _ = block.is_tagged_sql();
    }
});
