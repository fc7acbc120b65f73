//! pg_ask-mcp: pg_ask's SQL functions as Model Context Protocol tools, over stdio or
//! streamable HTTP. Each MCP session holds one database connection, as the role its token
//! (HTTP) or connection string (stdio) names, and runs every tool call in a transaction of
//! its own.

mod args;
mod db;
mod http;
mod server;
mod tokens;
mod tools;

use std::io::Write;
use std::process::ExitCode;

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use crate::args::{Options, Parsed, Transport};

fn main() -> ExitCode {
    let options = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            let _ = writeln!(std::io::stdout(), "{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            let _ = writeln!(std::io::stdout(), "pg_ask-mcp {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pg_ask-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pg_ask-mcp: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(options)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pg_ask-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), String> {
    let Options { transport, limits } = options;
    match transport {
        Transport::Stdio { dsn } => {
            let config = match dsn {
                Some(dsn) => {
                    let mut c: tokio_postgres::Config = dsn.parse().map_err(|e| format!("--dsn does not parse: {e}"))?;
                    if c.get_application_name().is_none() {
                        c.application_name("pg_ask-mcp");
                    }
                    c
                }
                None => args::dsn_from_env(|k| std::env::var(k).ok()),
            };
            let handler = server::Handler::stdio(config, limits);
            let service = handler.serve(rmcp::transport::stdio()).await.map_err(|e| format!("stdio: {e}"))?;
            service.waiting().await.map_err(|e| format!("stdio: {e}"))?;
            Ok(())
        }
        Transport::Http { addr, tokens, allow_non_loopback: _, allowed_hosts } => {
            let tokens = tokens::Tokens::load(&tokens).map_err(|e| e.to_string())?;
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("--http {addr}: {e}"))?;
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            if !bound.ip().is_loopback() {
                eprintln!(
                    "pg_ask-mcp: WARNING: serving {bound}, which is not a loopback address: bearer tokens cross the \
                     network in clear text unless a TLS proxy is in front"
                );
            }
            eprintln!(
                "pg_ask-mcp: listening on http://{bound}/ ({} tokens, at most {} sessions, statement timeout {} ms{})",
                tokens.count(),
                limits.max_sessions,
                limits.statement_timeout.as_millis(),
                if limits.allow_sql { ", run_sql on" } else { "" }
            );
            let shutdown = CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            #[cfg(unix)]
            {
                let stop = shutdown.clone();
                if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    tokio::spawn(async move {
                        term.recv().await;
                        stop.cancel();
                    });
                }
            }
            http::serve(listener, tokens, limits, &allowed_hosts, shutdown).await.map_err(|e| e.to_string())
        }
    }
}
