//! The LLM call every stage makes through the host, recorded in the trace.

use std::time::Instant;

use serde_json::json;

use super::host::Host;
use super::outcome::AskError;
use crate::llm::ChatRequest;
use crate::prompt;
use crate::trace::{StageTrace, Trace};

/// One LLM call, recorded in the trace. A prompt over `max_tokens` is not sent.
pub(super) fn call(
    host: &mut dyn Host,
    trace: &mut Trace,
    stage: &'static str,
    attempt: Option<u32>,
    req: &ChatRequest,
    max_tokens: usize,
) -> Result<String, AskError> {
    let tokens = prompt::bounds::tokens(req);
    if tokens > max_tokens {
        return Err(AskError::PromptTooLarge { stage, tokens, max: max_tokens });
    }
    let t = Instant::now();
    let mut st = StageTrace::new(stage, json!({"prompt_chars": req.prompt_chars(), "messages": req.messages.len()}));
    if trace.record_prompts {
        st.input["prompt"] = json!({
            "system": req.system,
            "messages": req.messages,
            "constraint": req.constraint.as_ref().map(|c| c.kind().as_str()),
        });
    }
    st.attempt = attempt;
    let result = host.chat(stage, req);
    trace.record_call(st, t, result).map_err(|source| AskError::Llm { stage, source })
}
