//! `loadrig study NAME`: the flags, handed to the study layer.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::StudyArgs;
use crate::error::InputError;
use crate::study::{self, Request};

pub fn study(args: &StudyArgs) -> Result<ExitCode> {
    if args.list {
        print!("{}", study::list());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(name) = args.name.clone() else {
        return Err(InputError::new("which study? name one, or --list them").into());
    };
    if let Some(addr) = &args.dashboard {
        crate::live::dashboard::serve_every_run(addr)?;
    }
    study::run(&Request {
        name,
        targets: args.targets.clone(),
        quick: args.quick,
        out: args.out.clone(),
        sets: args.set.clone(),
        only: args.only.clone(),
        fs_root: args.fs_root.clone(),
    })
}
