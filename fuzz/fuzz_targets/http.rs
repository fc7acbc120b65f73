//! The stand-in's HTTP/1.1 framing: request lines, headers, Content-Length and chunked bodies,
//! several requests on one connection.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = llm_standin::read_requests(data);
});
