//! `loadrig merge shard-*.json -o run.json`: the shards of one run merged into a normal run
//! file (`assemble::merge`), its checks judged on the whole run.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::analysis::{self, checks};
use crate::assemble::{self, ShardFile};
use crate::cli::MergeArgs;
use crate::report::console;
use crate::result::{self, RunResult};

pub fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let mut texts = Vec::new();
    let mut files = Vec::new();
    for path in &args.shards {
        let result = result::read(path)?;
        texts.extend(result.checks.iter().cloned());
        files.push(ShardFile {
            path: path.clone(),
            result,
        });
    }
    // The shards recorded the same checks; keep each once, then the flags'.
    texts.dedup();
    texts.extend(args.checks.iter().cloned());
    let parsed = texts
        .iter()
        .map(|t| checks::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = assemble::merge(files, args.allow_partial)?;
    conclude(&merged, &parsed, &args.out, "merged")
}

/// A merged run (by `merge` or `collect`): its checks known, written, its summary printed,
/// its checks judged (a failed one exits 1).
pub fn conclude(
    merged: &RunResult,
    parsed: &[checks::Check],
    out: &Path,
    verb: &str,
) -> Result<ExitCode> {
    checks::check_ops(
        parsed,
        &analysis::op_names(merged),
        &format!("the merged run of workload '{}'", merged.workload.name),
    )?;
    result::write_atomic(out, &serde_json::to_vec_pretty(merged)?)?;
    print!("{}", console::summary(merged));
    if let Some(s) = &merged.shards {
        println!(
            "{verb} {} of {} shards{}",
            s.merged.len(),
            s.count,
            if s.partial { " (partial)" } else { "" }
        );
    }
    println!("result: {}", out.display());
    let outcomes = checks::evaluate_all(parsed, merged);
    print!("{}", checks::render(&outcomes));
    Ok(if !outcomes.iter().all(|o| o.passed) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
