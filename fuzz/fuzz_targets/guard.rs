//! The guard on any text: generated SQL (read-only) and `ask.do()` steps (one write).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::guard;

fuzz_target!(|data: &[u8]| {
    let sql = String::from_utf8_lossy(data);
    if let Ok(checked) = guard::check_read_only(&sql) {
        // What the guard let through must pass it again unchanged: the executed text is the
        // checked one.
        match guard::check_read_only(&checked.sql) {
            Ok(again) => assert_eq!(again.sql, checked.sql, "the checked text changes on a second check"),
            Err(refusal) => panic!("accepted SQL {:?} is refused on a second check: {}", checked.sql, refusal.reason_code()),
        }
    }
    let _ = guard::check_write_step(&sql);
});
