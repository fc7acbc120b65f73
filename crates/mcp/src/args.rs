//! The command line of pg_ask-mcp: which transport, where the database is, and the limits.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
usage: pg_ask-mcp [--dsn CONNINFO] [options]                       (stdio)
       pg_ask-mcp --http ADDR:PORT --tokens FILE [options]          (streamable HTTP)

Serves pg_ask's SQL functions (ask.explain, ask.sql, ask.rows, ask.feedback,
ask.conversation_start, ask.tables, ask.explain_sql, ask.suggest_questions, and with --allow-sql
ask.query) as Model Context Protocol tools. Every tool call runs in a transaction of its own,
as the session's database role, under a statement timeout.

  --dsn CONNINFO             stdio: the connection string (libpq key=value or postgresql:// URL);
                             without it, PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD,
                             PGAPPNAME and PGCONNECT_TIMEOUT are read as libpq reads them
  --http ADDR:PORT           serve streamable HTTP on ADDR:PORT (a bare PORT binds 127.0.0.1)
  --tokens FILE              HTTP: bearer tokens, one `token connection-string` a line;
                             the file may not be readable or writable by group or others
  --allow-non-loopback       HTTP: allow binding an address other than loopback
  --allow-host NAME          HTTP: also accept requests whose Host header is NAME (repeatable;
                             loopback names are always accepted)
  --max-sessions N           HTTP: most sessions at once, shared out among the tokens (each
                             at least one); more get HTTP 503 (default 16)
  --max-request-bytes N      HTTP: largest request body; larger get HTTP 413 (default 65536)
  --body-timeout T           HTTP: how long a request's body may take to arrive; slower get
                             HTTP 408 (default 10s; as --statement-timeout, at most 10min)
  --session-idle SECONDS     HTTP: a session unused this long is closed (default 300)
  --statement-timeout T      each tool call's statement_timeout: 120, 120s, 2min, 500ms
                             (default 120s)
  --max-rows N               most rows the `rows` and `run_sql` tools return (default 200)
  --allow-sql                list and serve the `run_sql` tool (ask.query: read-only SQL
                             through pg_ask's guard, as the session's role) and take the
                             `sql` of `feedback` (a corrected query kept as verified);
                             without it no tool accepts SQL from the client
  -h, --help                 this text
  -V, --version              the version";

/// Where the server talks to its client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// One session over stdin/stdout, connected with this connection string (None: from the
    /// PG* environment variables).
    Stdio { dsn: Option<String> },
    /// Streamable HTTP on this address, sessions authenticated by the token file.
    Http { addr: SocketAddr, tokens: PathBuf, allow_non_loopback: bool, allowed_hosts: Vec<String> },
}

/// Everything the command line sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub transport: Transport,
    pub limits: Limits,
}

/// What every session and call is held to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub max_sessions: usize,
    pub max_request_bytes: usize,
    /// How long a request's body may take to arrive, from the end of its headers.
    pub body_timeout: Duration,
    pub session_idle: Duration,
    pub statement_timeout: Duration,
    pub max_rows: usize,
    pub allow_sql: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_sessions: 16,
            max_request_bytes: 64 * 1024,
            body_timeout: Duration::from_secs(10),
            session_idle: Duration::from_secs(300),
            statement_timeout: Duration::from_secs(120),
            max_rows: 200,
            allow_sql: false,
        }
    }
}

/// What parsing the command line came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    Run(Options),
    Help,
    Version,
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Parsed, String> {
    let mut args = args.into_iter();
    let mut limits = Limits::default();
    let (mut dsn, mut http, mut tokens) = (None, None, None);
    let mut allow_non_loopback = false;
    let mut allowed_hosts = Vec::new();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg, None),
        };
        match name.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "--allow-sql" | "--allow-non-loopback" => {
                if inline.is_some() {
                    return Err(format!("{name} takes no value"));
                }
                if name == "--allow-sql" {
                    limits.allow_sql = true;
                } else {
                    allow_non_loopback = true;
                }
                continue;
            }
            _ => {}
        }
        let mut value = || inline.clone().or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"));
        match name.as_str() {
            "--dsn" => dsn = Some(value()?),
            "--http" => http = Some(parse_addr(&value()?)?),
            "--tokens" => tokens = Some(PathBuf::from(value()?)),
            "--allow-host" => allowed_hosts.push(value()?),
            "--max-sessions" => limits.max_sessions = positive(&name, &value()?)?,
            "--max-request-bytes" => limits.max_request_bytes = positive(&name, &value()?)?,
            "--max-rows" => limits.max_rows = positive(&name, &value()?)?,
            "--session-idle" => limits.session_idle = Duration::from_secs(positive(&name, &value()?)? as u64),
            "--statement-timeout" => limits.statement_timeout = parse_duration(&name, &value()?)?,
            "--body-timeout" => {
                limits.body_timeout = parse_duration(&name, &value()?)?;
                if limits.body_timeout > Duration::from_secs(600) {
                    return Err(format!("{name}: at most 10min (a body that takes longer is not a client's)"));
                }
            }
            other => return Err(format!("unknown option {other} (see --help)")),
        }
    }
    let transport = match (http, tokens) {
        (Some(addr), Some(tokens)) => {
            if dsn.is_some() {
                return Err("--dsn is for stdio: over HTTP each token's line in --tokens names its connection".into());
            }
            if !addr.ip().is_loopback() && !allow_non_loopback {
                return Err(format!("--http {addr} is not a loopback address: pass --allow-non-loopback to serve it (behind TLS)"));
            }
            Transport::Http { addr, tokens, allow_non_loopback, allowed_hosts }
        }
        (Some(_), None) => return Err("--http needs --tokens FILE (who may connect, as which role)".into()),
        (None, Some(_)) => return Err("--tokens is for --http".into()),
        (None, None) => {
            if allow_non_loopback || !allowed_hosts.is_empty() {
                return Err("--allow-non-loopback and --allow-host are for --http".into());
            }
            Transport::Stdio { dsn }
        }
    };
    Ok(Parsed::Run(Options { transport, limits }))
}

fn positive(name: &str, value: &str) -> Result<usize, String> {
    match value.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{name} {value}: expected a whole number above 0")),
    }
}

/// `ADDR:PORT`, `[v6]:PORT`, or a bare `PORT` on 127.0.0.1.
fn parse_addr(value: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = value.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let value = value.strip_prefix("localhost:").map(|p| format!("127.0.0.1:{p}")).unwrap_or_else(|| value.to_owned());
    value.parse().map_err(|_| format!("--http {value}: expected ADDR:PORT such as 127.0.0.1:8808"))
}

/// `120`, `120s`, `2min`, `500ms`: a timeout between 1 ms and one day, for option `name`.
pub fn parse_duration(name: &str, value: &str) -> Result<Duration, String> {
    let v = value.trim();
    let (digits, unit_ms) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = v.strip_suffix("min") {
        (n, 60_000)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000)
    } else {
        (v, 1000)
    };
    let n: u64 = digits.trim().parse().map_err(|_| format!("{name} {value}: expected 120, 120s, 2min or 500ms"))?;
    let ms = n.saturating_mul(unit_ms);
    if ms == 0 || ms > 86_400_000 {
        return Err(format!("{name} {value}: must be between 1 ms and one day"));
    }
    Ok(Duration::from_millis(ms))
}

/// The stdio connection string from libpq's environment variables, with libpq's defaults
/// (the Debian socket directory, port 5432, the operating system user, a database named
/// like the user).
pub fn dsn_from_env(get: impl Fn(&str) -> Option<String>) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    let host = get("PGHOST").filter(|h| !h.is_empty()).unwrap_or_else(|| "/var/run/postgresql".into());
    for h in host.split(',') {
        config.host(h);
    }
    let port = get("PGPORT").and_then(|p| p.parse().ok()).unwrap_or(5432);
    config.port(port);
    let user = get("PGUSER").or_else(|| get("USER")).unwrap_or_else(|| "postgres".into());
    config.dbname(get("PGDATABASE").unwrap_or_else(|| user.clone()));
    config.user(&user);
    if let Some(password) = get("PGPASSWORD") {
        config.password(password);
    }
    if let Some(secs) = get("PGCONNECT_TIMEOUT").and_then(|s| s.parse().ok()) {
        config.connect_timeout(Duration::from_secs(secs));
    }
    config.application_name(get("PGAPPNAME").unwrap_or_else(|| "pg_ask-mcp".into()));
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Options, String> {
        match parse(args.iter().map(|s| (*s).to_owned()))? {
            Parsed::Run(o) => Ok(o),
            other => Err(format!("{other:?}")),
        }
    }

    #[test]
    fn stdio_by_default() {
        let o = run(&[]).unwrap();
        assert_eq!(o.transport, Transport::Stdio { dsn: None });
        assert_eq!(o.limits, Limits::default());
        let o = run(&["--dsn", "host=/tmp user=a", "--statement-timeout=5s", "--allow-sql"]).unwrap();
        assert_eq!(o.transport, Transport::Stdio { dsn: Some("host=/tmp user=a".into()) });
        assert_eq!(o.limits.statement_timeout, Duration::from_secs(5));
        assert!(o.limits.allow_sql);
    }

    #[test]
    fn http_needs_tokens_and_loopback() {
        assert!(run(&["--http", "127.0.0.1:8808"]).unwrap_err().contains("--tokens"));
        let o = run(&["--http", "8808", "--tokens", "t"]).unwrap();
        assert!(matches!(o.transport, Transport::Http { addr, .. } if addr.to_string() == "127.0.0.1:8808"));
        assert!(run(&["--http", "0.0.0.0:8808", "--tokens", "t"]).unwrap_err().contains("--allow-non-loopback"));
        assert!(run(&["--http", "0.0.0.0:8808", "--tokens", "t", "--allow-non-loopback"]).is_ok());
        assert!(run(&["--http", "localhost:1", "--tokens", "t", "--dsn", "x"]).unwrap_err().contains("--dsn"));
        assert!(run(&["--http", "nowhere", "--tokens", "t"]).unwrap_err().contains("ADDR:PORT"));
    }

    #[test]
    fn limits_are_checked() {
        assert!(run(&["--max-sessions", "0"]).unwrap_err().contains("above 0"));
        assert!(run(&["--max-rows"]).unwrap_err().contains("needs a value"));
        assert!(run(&["--bogus"]).unwrap_err().contains("unknown option"));
        assert_eq!(parse_duration("--statement-timeout", "2min").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("--statement-timeout", "500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("--statement-timeout", "0").is_err());
        assert!(parse_duration("--body-timeout", "soon").unwrap_err().starts_with("--body-timeout"));
        assert_eq!(Limits::default().body_timeout, Duration::from_secs(10));
        assert_eq!(run(&["--body-timeout", "3s"]).unwrap().limits.body_timeout, Duration::from_secs(3));
        assert!(run(&["--body-timeout", "1h"]).is_err() && run(&["--body-timeout=11min"]).is_err());
    }

    #[test]
    fn environment_like_libpq() {
        let env = |k: &str| match k {
            "PGHOST" => Some("/var/tmp/x".to_owned()),
            "PGPORT" => Some("55470".to_owned()),
            "USER" => Some("alice".to_owned()),
            _ => None,
        };
        let c = dsn_from_env(env);
        assert_eq!(c.get_ports(), &[55470]);
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_dbname(), Some("alice"));
    }
}
