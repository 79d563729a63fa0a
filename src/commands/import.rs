//! `loadrig import pgbench SCRIPT.sql`: a pgbench custom script as a workload file, on
//! standard output or written atomically to `-o FILE`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ImportCommand;
use crate::error::InputError;
use crate::workload::import::pgbench as pgbench_import;

pub fn import(what: &ImportCommand) -> Result<ExitCode> {
    let ImportCommand::Pgbench(args) = what;
    let shown = args.script.display().to_string();
    let text = std::fs::read_to_string(&args.script).map_err(|e| {
        InputError::new(format!("{shown}: {e}")).help("give the path of a pgbench script (-f FILE)")
    })?;
    let name = args
        .script
        .file_stem()
        .map_or("pgbench-script".to_string(), |s| {
            s.to_string_lossy().into_owned()
        });
    let toml = pgbench_import::translate(&shown, &name, &text)?;
    match &args.out {
        Some(path) => {
            // A reader never sees half a file.
            crate::result::write_atomic(path, toml.as_bytes())?;
            eprintln!("{shown} -> {}", path.display());
        }
        None => std::io::stdout().lock().write_all(toml.as_bytes())?,
    }
    Ok(ExitCode::SUCCESS)
}
