//! `loadrig recover RUN.jsonl`: the result of a run that died before writing it, rebuilt
//! from its interval stream.

use std::process::ExitCode;

use anyhow::Result;

use crate::assemble;
use crate::cli::RecoverArgs;
use crate::error::InputError;
use crate::report::console;
use crate::result::{self, stream};

/// `loadrig recover RUN.jsonl [-o RUN.json]`.
pub fn recover(args: &RecoverArgs) -> Result<ExitCode> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.stream.with_extension("json"));
    if out.exists() {
        return Err(InputError::new(format!("'{}' already exists", out.display()))
            .help("a run that wrote its result needs no recovery; give -o FILE to write the recovered result elsewhere")
            .into());
    }
    let stream = stream::read_stream(&args.stream)?;
    let r = assemble::recover(&stream)?;
    let bytes = serde_json::to_vec_pretty(&r)?;
    result::write_atomic(&out, &bytes)?;
    print!("{}", console::summary(&r));
    println!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
