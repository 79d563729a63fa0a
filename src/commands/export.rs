//! `loadrig export RUN.json`: CSV tables, the HdrHistogram interval log, YCSB's text output.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ExportArgs;
use crate::error::InputError;
use crate::plan::same_path;
use crate::report::export as exports;
use crate::report::ycsb;
use crate::result;

/// `loadrig export RUN.json --csv DIR --hdr-log FILE --ycsb FILE`.
pub fn export(args: &ExportArgs) -> Result<ExitCode> {
    if args.csv.is_none() && args.hdr_log.is_none() && args.ycsb.is_none() {
        return Err(InputError::new("nothing to export")
            .help(
                "give --csv DIR (intervals.csv, operations.csv), --hdr-log FILE and/or --ycsb FILE",
            )
            .into());
    }
    for (flag, file) in [("--hdr-log", &args.hdr_log), ("--ycsb", &args.ycsb)] {
        if let Some(file) = file.as_ref().filter(|f| same_path(f, &args.run)) {
            return Err(InputError::new(format!(
                "{flag} {}: that is the result file itself",
                file.display()
            ))
            .into());
        }
    }
    if let (Some(log), Some(text)) = (&args.hdr_log, &args.ycsb) {
        if same_path(log, text) {
            return Err(InputError::new(format!(
                "--hdr-log and --ycsb both name {}",
                log.display()
            ))
            .help("give each export its own file")
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
    let text = args.ycsb.as_ref().map(|_| ycsb::text(&r)).transpose()?;
    if let Some(dir) = &args.csv {
        for path in exports::write_csv(&r, dir)? {
            println!("wrote {}", path.display());
        }
    }
    for (path, bytes) in [(&args.hdr_log, log), (&args.ycsb, text)] {
        if let (Some(path), Some(bytes)) = (path, bytes) {
            result::write_atomic(path, &bytes)?;
            println!("wrote {}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
