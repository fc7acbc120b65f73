//! Secrets (API keys) that must never leave the backend in any text.

use std::fmt;

/// An API key. `Debug` and `Display` print `[redacted]`; the only way to the value is
/// [`Secret::expose`], used where the key goes into an HTTP header.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Replace every occurrence of the secret in `text` with `[redacted]`.
    ///
    /// Applied to every text that can leave the backend (errors, notices, ledger rows,
    /// traces), since an LLM server may echo request headers back in an error body.
    pub fn scrub(&self, text: &str) -> String {
        scrub(text, &self.0)
    }

    /// Whether [`scrub`](Secret::scrub) would change `text`.
    pub fn occurs_in(&self, text: &str) -> bool {
        self.0.len() >= MIN_SCRUBBED && text.contains(&self.0)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Secrets shorter than this are not scrubbed.
const MIN_SCRUBBED: usize = 4;

/// Replace `secret` in `text`; secrets shorter than 4 characters are not scrubbed (they would
/// mangle ordinary words and are not real keys).
pub fn scrub(text: &str, secret: &str) -> String {
    if secret.len() < MIN_SCRUBBED {
        return text.to_string();
    }
    text.replace(secret, "[redacted]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::new("sk-live-123456");
        assert_eq!(format!("{s:?} {s}"), "[redacted] [redacted]");
        assert_eq!(s.expose(), "sk-live-123456");
    }

    #[test]
    fn scrubs_every_occurrence() {
        let s = Secret::new("sk-live-123456");
        assert_eq!(s.scrub("bad key sk-live-123456 (sk-live-123456)"), "bad key [redacted] ([redacted])");
        assert_eq!(Secret::new("").scrub("text"), "text");
        assert!(s.occurs_in("x sk-live-123456 y"));
        assert!(!s.occurs_in("sk-live-12345"));
        assert!(!Secret::new("abc").occurs_in("abc"));
    }
}
