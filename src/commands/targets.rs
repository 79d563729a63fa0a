//! `loadrig list`, `init` and `cleanup`: what there is, and removing what loadrig made.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::engine;
use crate::error::InputError;
use crate::report::console;
use crate::targets::{self, expand_env, redact, with_target_type, Params, Target, TargetUrl};
use crate::workload::{self, builtin, Source};

/// `loadrig cleanup --target URL`: put back the server settings an experiment that was
/// killed left changed (its journal), and drop loadrig's namespace on the target, nothing else.
pub fn cleanup(target: &str) -> Result<ExitCode> {
    let url = TargetUrl::parse(&expand_env(target)?)?;
    let shown = redact(target);
    for line in
        crate::experiment::settings::cleanup(&url).with_context(|| format!("target {shown}"))?
    {
        println!("{line}");
    }
    let no_params = Params::new();
    let removed = with_target_type!(url.scheme.as_str(), T => {
        engine::cleanup(&T::from_url(&url, &no_params)?)
    })
    .with_context(|| format!("target {shown}"))?;
    println!(
        "removed {} loadrig object(s) from {shown}",
        console::thousands(removed)
    );
    // The session-stores study's unindexed image, left mounted by a killed study.
    if url.scheme == "fs" && crate::study::unindexed_fs::release(Path::new(&url.location))? {
        println!(
            "unmounted the study's ext4 image at {} and removed it",
            url.location
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn list() -> Result<ExitCode> {
    println!("Built-in workloads (loadrig run NAME; loadrig init NAME > my.toml):");
    let width = builtin::BUILTIN
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(0);
    for (name, text) in builtin::BUILTIN {
        let source = Source { path: name, text };
        let description = workload::compile(&source, &[])
            .map(|w| w.description)
            .unwrap_or_default();
        println!("  {name:<width$}  {description}");
    }
    println!("\nTargets (--target URL):");
    for (scheme, what) in targets::SCHEMES {
        println!("  {scheme:<44} {what}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn init(name: &str) -> Result<ExitCode> {
    let text = builtin::text(name).ok_or_else(|| {
        InputError::new(format!("no built-in workload named '{name}'")).help(format!(
            "built-in workloads: {}",
            builtin::BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
