//! `loadrig collect --listen ADDR --shards N -o run.json`: a sharded run taken in as it goes
//! (`live::collector`), then written and judged as `loadrig merge` writes and judges one.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use super::merge::conclude;
use crate::analysis::checks;
use crate::cli::CollectArgs;
use crate::error::InputError;
use crate::live::collector::{self, Config};
use crate::live::wire;
use crate::targets::tls;

/// Ctrl-C: the collector ends with what it has.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

pub fn collect(args: &CollectArgs) -> Result<ExitCode> {
    let config = config(args)?;
    let extra = args
        .checks
        .iter()
        .map(|t| checks::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    // Everything that can be refused is refused before the listener is bound.
    let listener = collector::bind(config.listen)?;
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let merged = collector::run(config, listener)?;
    // The shards recorded the same checks; then the flags'.
    let mut parsed = merged
        .checks
        .iter()
        .map(|t| checks::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    parsed.extend(extra);
    conclude(&merged, &parsed, &args.out, "collected")
}

fn config(args: &CollectArgs) -> Result<Config, InputError> {
    let listen: std::net::SocketAddr = args.listen.parse().map_err(|_| {
        InputError::new(format!("--listen {}: expected IP:PORT", args.listen))
            .help("for example --listen 127.0.0.1:7070, or 0.0.0.0:7070 (with a token and TLS) for shards on other machines")
    })?;
    if args.shards == 0 || args.shards > 10_000 {
        return Err(InputError::new(format!(
            "--shards {}: expected 1 to 10000",
            args.shards
        )));
    }
    let token = wire::read_token(args.token_file.as_deref())?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
        _ => None,
    };
    if !listen.ip().is_loopback() {
        if token.is_none() {
            return Err(InputError::new(format!(
                "--listen {listen}: beyond loopback the shards must show a token, and none is given"
            ))
            .help(format!(
                "--token-file FILE or {} (the same on every shard), or listen on 127.0.0.1",
                wire::TOKEN_ENV
            )));
        }
        if tls.is_none() {
            return Err(InputError::new(format!(
                "--listen {listen}: beyond loopback the stream goes over TLS, and no certificate is given"
            ))
            .help("--tls-cert FILE --tls-key FILE (the shards check it with --collect-ca), or listen on 127.0.0.1"));
        }
    }
    if let Some(addr) = &args.dashboard {
        crate::live::dashboard::parse_addr(addr)?;
    }
    Ok(Config {
        listen,
        shards: args.shards,
        token,
        tls,
        patience: crate::duration::parse(&args.patience, "--patience")?,
        dashboard: args.dashboard.clone(),
        describe: crate::runner::describe,
        interrupted: &INTERRUPTED,
    })
}
