//! Inputs the fuzz targets (`bash scripts/fuzz.sh`, fuzz/fuzz_targets/) found to crash or
//! mislead a parser, each kept as a test once fixed. Every test names its target; the input is
//! written as the fuzzer found it (bytes as Rust escapes where they are not printable).

use pg_ask_core::chain;
use pg_ask_core::selection::context::{parse_steps_answer, StepsAnswer};

/// replies: a reply opening with a character of several bytes, where "ROWS" would be, sliced
/// the reply inside that character (a panic, an internal error in the backend).
#[test]
fn replies_steps_answer_opening_with_a_multibyte_character() {
    let reply = String::from_utf8_lossy(b"\xa8\xba\xb3\xbaCT \"pg_catalog\".\"pg_sleep\"(1)");
    assert!(matches!(parse_steps_answer(&reply, &[true]), Ok(StepsAnswer::Text { .. })));
    for reply in ["éROWS", "ÀBC", "日本語", "r\u{301}ows 1"] {
        assert!(matches!(parse_steps_answer(reply, &[true]), Ok(StepsAnswer::Text { .. })), "{reply}");
    }
    assert_eq!(parse_steps_answer("rows 1", &[true]), Ok(StepsAnswer::Rows { step: 1 }));
}

/// replies (the same slicing, found by reading for it after the first): an `ask.do()` plan
/// line or a step rewrite opening with a multi-byte character.
#[test]
fn replies_chain_plans_and_rewrites_opening_with_a_multibyte_character() {
    for reply in ["ñStep 1: x\n```sql\nSELECT 1\n```", "日本 1. SELECT 1", "ÉCANNOT", "cannotñ"] {
        let _ = chain::plan::parse_chain(reply);
        let _ = chain::step_impossible(reply);
    }
    assert_eq!(chain::step_impossible("ÉCANNOT do it"), None);
    assert_eq!(chain::step_impossible("CANNOT: no such fruit").as_deref(), Some("no such fruit"));
    assert_eq!(chain::step_impossible("cannot").as_deref(), Some("no reason given"));
}
