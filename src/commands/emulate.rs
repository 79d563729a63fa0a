//! `loadrig emulate supplier`: serve an emulator from `emulate` until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::mpsc;

use anyhow::Result;

use crate::cli::EmulateCommand;
use crate::duration;
use crate::emulate::supplier::Supplier;
use crate::error::InputError;

pub fn emulate(what: &EmulateCommand) -> Result<ExitCode> {
    let EmulateCommand::Supplier(args) = what;
    let addr: SocketAddr = args.listen.trim().parse().map_err(|e| {
        InputError::new(format!("--listen '{}': not an address ({e})", args.listen))
            .help("write IP:PORT on loopback, like 127.0.0.1:8081 or 127.0.0.1:0 for any free port")
    })?;
    let delay = duration::parse(&args.delay, "--delay")?;
    let response_time = duration::parse(&args.response_time, "--response-time")?;
    let (stop, stopped) = mpsc::channel();
    ctrlc::set_handler(move || {
        let _ = stop.send(());
    })?;
    let supplier = Supplier::start(addr, delay, response_time)?;
    // The first line is what a script reads to find the port.
    let mut out = std::io::stdout().lock();
    writeln!(out, "listening on {}", supplier.url())?;
    out.flush()?;
    drop(out);
    let _ = stopped.recv();
    let stats = supplier.stats();
    drop(supplier);
    eprintln!(
        "supplier: {} received, {} delivered, {} duplicates, {} pending",
        stats.received.len(),
        stats.delivered.len(),
        stats.duplicates,
        stats.pending
    );
    Ok(ExitCode::SUCCESS)
}
