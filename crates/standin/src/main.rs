//! `llm-standin`: the stand-in LLM server as a process, for tests that drive it from outside
//! (psql, shell scripts). Runs until killed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use llm_standin::{Script, StandIn};

const USAGE: &str = "\
usage: llm-standin [--addr HOST] [--port PORT] [--script FILE.json] [--port-file FILE]
                   [--embedding-dim N]

Starts the stand-in LLM server (OpenAI, Anthropic and Ollama protocols) and runs until
killed. Prints `listening on http://HOST:PORT` once it accepts requests, after writing the
port to --port-file if given. Without --script every chat request gets a 500 (no rule
matched) until a script is posted to /_standin/script.

  --addr HOST          address to bind (default 127.0.0.1)
  --port PORT          port to bind (default 0: a free port)
  --script FILE        script JSON (see the llm-standin crate documentation)
  --port-file FILE     write the bound port (decimal, no newline) to FILE
  --embedding-dim N    dimension of embeddings (default 384)";

struct Options {
    addr: String,
    port: u16,
    script: Option<PathBuf>,
    port_file: Option<PathBuf>,
    embedding_dim: Option<usize>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options { addr: "127.0.0.1".into(), port: 0, script: None, port_file: None, embedding_dim: None };
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (flag, None),
        };
        const OPTIONS: [&str; 5] = ["--addr", "--port", "--script", "--port-file", "--embedding-dim"];
        if !OPTIONS.contains(&name.as_str()) {
            return Err(format!("unknown option {name}"));
        }
        let value = inline.or_else(|| args.next()).ok_or_else(|| format!("{name} needs a value"))?;
        match name.as_str() {
            "--addr" => options.addr = value,
            "--port" => options.port = value.parse().map_err(|e| format!("--port {value}: {e}"))?,
            "--script" => options.script = Some(value.into()),
            "--port-file" => options.port_file = Some(value.into()),
            "--embedding-dim" => {
                let dim = value.parse().map_err(|e| format!("--embedding-dim {value}: {e}"))?;
                options.embedding_dim = Some(dim);
            }
            _ => unreachable!("checked above"),
        }
    }
    Ok(options)
}

/// Writes the port so that a reader never sees a partial file: a temporary file, then rename.
fn write_port_file(path: &Path, port: u16) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, port.to_string())?;
    std::fs::rename(&tmp, path)
}

fn run(options: Options) -> Result<(), String> {
    let script = match &options.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Script::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => Script::default(),
    };
    let host = if options.addr.contains(':') && !options.addr.starts_with('[') {
        format!("[{}]", options.addr) // a bare IPv6 address
    } else {
        options.addr.clone()
    };
    let bind = format!("{host}:{}", options.port);
    let server = StandIn::start_on(&bind, script).map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    if let Some(dim) = options.embedding_dim {
        server.set_embedding_dim(dim);
    }
    if let Some(path) = &options.port_file {
        write_port_file(path, server.port()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let mut stdout = std::io::stdout().lock();
    // If stdout is closed, the server still serves; the port file tells where.
    let _ = writeln!(stdout, "listening on {}", server.url()).and_then(|()| stdout.flush());
    drop(stdout);

    // Serve until the process is killed (SIGTERM and SIGINT end it with their default action).
    loop {
        std::thread::park();
    }
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("llm-standin: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("llm-standin: {message}");
            ExitCode::FAILURE
        }
    }
}
