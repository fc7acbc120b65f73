//! The protocol decoders: chat and embedding responses as pg_ask reads them from each
//! provider, and requests as the stand-in decodes them for each endpoint.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pg_ask_core::config::Provider;
use pg_ask_core::llm::{embed, protocol};

fuzz_target!(|data: &[u8]| {
    for provider in [Provider::OpenAi, Provider::Anthropic, Provider::Ollama] {
        let _ = protocol::parse_response(provider, data);
    }
    let _ = protocol::parse_json(data);
    for n in [1, 3] {
        for kind in [embed::EmbedProtocol::OpenAi, embed::EmbedProtocol::Ollama] {
            if let Ok(vectors) = embed::parse_response(kind, data, n) {
                assert_eq!(vectors.len(), n, "as many vectors as texts sent");
            }
        }
    }
    let headers = vec![("x-api-key".to_owned(), "k".to_owned()), ("anthropic-version".to_owned(), "2023-06-01".to_owned())];
    let _ = llm_standin::decode_request("/v1/chat/completions", &headers, data);
});
