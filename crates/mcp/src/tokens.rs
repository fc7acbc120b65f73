//! The token file of the HTTP transport: which bearer token connects as which database role.
//!
//! One `token<whitespace>connection-string` a line; blank lines and lines starting with `#`
//! are skipped. The file may not be readable or writable by group or others. A request's
//! token is compared with every token in constant time, so timing tells nothing of a prefix.

use std::path::Path;

/// The shortest token accepted: shorter ones can be guessed.
pub const MIN_TOKEN_LEN: usize = 16;

/// What went wrong reading the token file. No message ever quotes a token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the token file {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the token file {path} is readable or writable by group or others (mode {mode:o}): chmod 600 {path}")]
    Permissions { path: String, mode: u32 },
    #[error("token file line {line}: expected `token connection-string`")]
    Shape { line: usize },
    #[error("token file line {line}: the token is shorter than {MIN_TOKEN_LEN} characters")]
    Short { line: usize },
    #[error("token file line {line}: the same token as line {first}")]
    Duplicate { line: usize, first: usize },
    #[error("token file line {line}: the connection string does not parse: {message}")]
    Dsn { line: usize, message: String },
    #[error("the token file {path} holds no token")]
    Empty { path: String },
}

/// One accepted token and whom it connects as.
#[derive(Clone)]
pub struct Entry {
    token: Vec<u8>,
    /// The connection, as parsed from the file.
    pub config: tokio_postgres::Config,
    /// The line it came from: how a session names its principal in logs, never the token.
    pub line: usize,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("line", &self.line).field("user", &self.config.get_user()).finish()
    }
}

/// Every token of the file.
#[derive(Debug, Clone)]
pub struct Tokens {
    entries: Vec<Entry>,
}

impl Tokens {
    /// Reads and checks the file at `path`.
    pub fn load(path: &Path) -> Result<Tokens, TokenError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|source| TokenError::Read { path: shown.clone(), source })?;
        check_mode(&shown, &meta)?;
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read { path: shown.clone(), source })?;
        let tokens = Tokens::parse(&text)?;
        if tokens.entries.is_empty() {
            return Err(TokenError::Empty { path: shown });
        }
        Ok(tokens)
    }

    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<Tokens, TokenError> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (token, dsn) = trimmed.split_once(char::is_whitespace).ok_or(TokenError::Shape { line })?;
            let dsn = dsn.trim();
            if dsn.is_empty() {
                return Err(TokenError::Shape { line });
            }
            if token.chars().count() < MIN_TOKEN_LEN {
                return Err(TokenError::Short { line });
            }
            if let Some(first) = entries.iter().find(|e| e.token == token.as_bytes()) {
                return Err(TokenError::Duplicate { line, first: first.line });
            }
            let mut config: tokio_postgres::Config =
                dsn.parse().map_err(|e: tokio_postgres::Error| TokenError::Dsn { line, message: e.to_string() })?;
            if config.get_application_name().is_none() {
                config.application_name("pg_ask-mcp");
            }
            entries.push(Entry { token: token.as_bytes().to_vec(), config, line });
        }
        Ok(Tokens { entries })
    }

    /// The entry whose token is `presented`, comparing against every token in constant time.
    pub fn find(&self, presented: &[u8]) -> Option<&Entry> {
        let mut found = None;
        for entry in &self.entries {
            if constant_time_eq(&entry.token, presented) {
                found = Some(entry);
            }
        }
        found
    }

    /// How many tokens the file holds.
    pub fn count(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(unix)]
fn check_mode(path: &str, meta: &std::fs::Metadata) -> Result<(), TokenError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TokenError::Permissions { path: path.to_owned(), mode });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_path: &str, _meta: &std::fs::Metadata) -> Result<(), TokenError> {
    Ok(())
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..n {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= u64::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer(header: Option<&[u8]>) -> Option<&[u8]> {
    let value = header?;
    let scheme = value.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = value[7..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# who may connect\n\
        alice-token-0123456789   host=/tmp port=5432 user=alice dbname=shop\n\
        \n\
        bob-token-0123456789abc\tpostgresql://bob@localhost/shop\n";

    #[test]
    fn parses_and_finds() {
        let t = Tokens::parse(FILE).unwrap();
        assert_eq!(t.count(), 2);
        let alice = t.find(b"alice-token-0123456789").unwrap();
        assert_eq!(alice.line, 2);
        assert_eq!(alice.config.get_user(), Some("alice"));
        assert_eq!(t.find(b"bob-token-0123456789abc").unwrap().config.get_user(), Some("bob"));
        assert!(t.find(b"alice-token-012345678").is_none());
        assert!(t.find(b"").is_none());
    }

    #[test]
    fn refuses_bad_lines_without_quoting_tokens() {
        let e = Tokens::parse("lonely-token-0123456789\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && !e.contains("lonely"), "{e}");
        assert!(matches!(Tokens::parse("short host=/tmp").unwrap_err(), TokenError::Short { line: 1 }));
        let dup = "same-token-0123456789 user=a\nsame-token-0123456789 user=b\n";
        assert!(matches!(Tokens::parse(dup).unwrap_err(), TokenError::Duplicate { line: 2, first: 1 }));
        let e = Tokens::parse("good-token-0123456789 port=notaport").unwrap_err().to_string();
        assert!(e.contains("line 1") && !e.contains("good-token"), "{e}");
    }

    #[test]
    fn refuses_a_file_others_may_read() {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::temp_dir().join(format!("pg_ask-mcp-tokens-{}", std::process::id()));
        std::fs::write(&path, FILE).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(Tokens::load(&path).unwrap_err(), TokenError::Permissions { mode: 0o644, .. }));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(Tokens::load(&path).unwrap().count(), 2);
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(matches!(Tokens::load(&path).unwrap_err(), TokenError::Empty { .. }));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn bearer_header() {
        assert_eq!(bearer(Some(b"Bearer abc")), Some(&b"abc"[..]));
        assert_eq!(bearer(Some(b"bearer  abc ")), Some(&b"abc"[..]));
        assert_eq!(bearer(Some(b"Basic abc")), None);
        assert_eq!(bearer(Some(b"Bearer ")), None);
        assert_eq!(bearer(None), None);
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
