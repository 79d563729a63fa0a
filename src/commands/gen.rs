//! `loadrig gen ldif`: test data, written by the generator in `workload::import::ldif`.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::GenCommand;
use crate::error::InputError;
use crate::workload::import::ldif;

pub fn gen(what: &GenCommand) -> Result<ExitCode> {
    let GenCommand::Ldif(args) = what;
    if args.entries == 0 {
        return Err(InputError::new("--entries 0: expected at least one entry")
            .help("--entries 100000 writes seed 002's directory")
            .into());
    }
    let base = ldif::check_base(&args.base)?;
    match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path)
                .map_err(|e| InputError::new(format!("-o {}: {e}", path.display())))?;
            let mut w = BufWriter::new(file);
            ldif::write(&mut w, &base, args.entries, args.seed)
                .and_then(|()| w.flush())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "{} entries under {} in {}",
                args.entries,
                ldif::people_dn(&base),
                path.display()
            );
        }
        None => {
            let mut w = BufWriter::new(std::io::stdout().lock());
            ldif::write(&mut w, &base, args.entries, args.seed).and_then(|()| w.flush())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
