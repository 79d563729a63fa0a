//! `loadrig export RUN.json`: CSV tables and the HdrHistogram interval log.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ExportArgs;
use crate::error::InputError;
use crate::plan::same_path;
use crate::report::export as exports;
use crate::result;

/// `loadrig export RUN.json --csv DIR --hdr-log FILE`.
pub fn export(args: &ExportArgs) -> Result<ExitCode> {
    if args.csv.is_none() && args.hdr_log.is_none() {
        return Err(InputError::new("nothing to export")
            .help("give --csv DIR (intervals.csv, operations.csv) and/or --hdr-log FILE")
            .into());
    }
    if let Some(log) = &args.hdr_log {
        if same_path(log, &args.run) {
            return Err(InputError::new(format!(
                "--hdr-log {}: that is the result file itself",
                log.display()
            ))
            .into());
        }
    }
    let r = result::read(&args.run)?;
    // Build everything first, so a failure writes nothing.
    let log = args
        .hdr_log
        .as_ref()
        .map(|_| exports::hdr_log(&r))
        .transpose()?;
    if let Some(dir) = &args.csv {
        for path in exports::write_csv(&r, dir)? {
            println!("wrote {}", path.display());
        }
    }
    if let (Some(path), Some(bytes)) = (&args.hdr_log, log) {
        result::write_atomic(path, &bytes)?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
