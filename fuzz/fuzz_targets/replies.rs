//! Every stage's reply parser on the same reply: the answer decision, the context switch, the
//! answer over a plan's steps, retrieval plans, the value written for a literal and corrections,
//! `ask.do()` plans and step rewrites, shadow answers (rows and outcomes), structured replies read as text, lenient JSON,
//! rendered schema text and suite rows.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::constrain::schemas::Shape;
use pg_ask_core::shadow::QueryKind;
use pg_ask_core::{chain, evaluate, json, prompt, schema, selection, shadow, values};

const SHAPES: [Shape; 7] =
    [Shape::Answer, Shape::Context, Shape::StepsAnswer, Shape::RetrievalPlan, Shape::ChainPlan, Shape::ShadowRows, Shape::ShadowOutcome];

fuzz_target!(|data: &[u8]| {
    let reply = String::from_utf8_lossy(data);
    let _ = prompt::parse_answer(&reply);
    let _ = selection::context::parse_context(&reply);
    let _ = selection::context::parse_steps_answer(&reply, &[true, false, true]);
    let candidates = vec!["public.cities".to_owned(), "public.restaurants".to_owned(), "app.\"Users\"".to_owned()];
    let _ = selection::plan::parse_plan(&reply, &candidates);
    if let Some(value) = values::prompt::read_value(&reply) {
        assert!(!value.is_empty() && value.chars().count() <= values::prompt::MAX_VALUE_CHARS, "{value:?}");
        assert!(!value.chars().any(char::is_control), "{value:?}");
    }
    if let Ok(original) = pg_ask_core::guard::check_read_only("SELECT * FROM cities WHERE name = 'LA'") {
        let _ = values::prompt::parse_correction_checked(&original, &reply);
    }
    let _ = chain::plan::parse_chain(&reply);
    let _ = chain::step_impossible(&reply);
    let _ = shadow::prompting::parse_reply(&reply, QueryKind::Select);
    let _ = shadow::prompting::parse_reply(&reply, QueryKind::Modify);
    for shape in SHAPES {
        let _ = shape.readable(&reply);
    }
    if let Some(value) = json::lenient(&reply) {
        let _ = evaluate::suite::parse_suite_rows(&value);
    }
    let _ = schema::parse_rendered(&reply);
});
