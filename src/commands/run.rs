//! `loadrig run`: resolve a plan, execute it, write the result, then its report and checks.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::analysis::checks::{self, Check};
use crate::cli::RunArgs;
use crate::engine::NoClientConnected;
use crate::plan;
use crate::report::{console, html};
use crate::result::{self, RunStatus};
use crate::runner::{self, View};

pub fn run(args: &RunArgs) -> Result<ExitCode> {
    let plan = plan::resolve(args)?;
    let result = match runner::execute(&plan, View::Live) {
        // Not bad input (exit 2): the target refused every client.
        Err(e) if e.downcast_ref::<NoClientConnected>().is_some() => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::from(1));
        }
        other => other?,
    };
    // A shard's checks are judged on the merged run (`loadrig merge`), not on its share.
    let checks = if plan.load.shard.is_some() {
        // The runner recorded them in the result.
        if !plan.checks.is_empty() {
            println!("checks: left to `loadrig merge`, which judges them on the whole run");
        }
        &[][..]
    } else {
        &plan.checks[..]
    };
    let out = &plan.outputs.result;
    // A full disk: the summary still shows, and the stream may rebuild the file later.
    if let Err(e) = result::write_atomic(out, &serde_json::to_vec_pretty(&result)?) {
        print!("{}", console::summary(&result));
        let stream = out.with_extension("jsonl");
        return Err(e.context(format!(
            "the result was not written; once there is room, `loadrig recover {} -o FILE` rebuilds it from the intervals streamed before the disk filled",
            stream.display()
        )));
    }
    print!("{}", console::summary(&result));
    for v in &result.verify {
        let verdict = if v.passed { "passed" } else { "FAILED" };
        println!("verify {}: {verdict} ({})", v.name, v.values.join(" / "));
    }
    println!("result: {}", out.display());
    let checks_passed = after_run(out, plan.outputs.report.as_deref(), checks)?;
    Ok(if result.status == RunStatus::Interrupted {
        ExitCode::from(130)
    } else if !checks_passed || result.verify.iter().any(|v| !v.passed) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// After the result is written: the `--report` and the checks, both computed from the file
/// just written. Returns false when a check failed.
fn after_run(out: &Path, report: Option<&Path>, checks: &[Check]) -> Result<bool> {
    if report.is_none() && checks.is_empty() {
        return Ok(true);
    }
    let written = result::read(out)?;
    if let Some(path) = report {
        let label = out.file_name().map_or_else(
            || out.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let page = html::render(&[(label, written.clone())])?;
        result::write_atomic(path, page.as_bytes())?;
        println!("report: {}", path.display());
    }
    let outcomes = checks::evaluate_all(checks, &written);
    print!("{}", checks::render(&outcomes));
    Ok(outcomes.iter().all(|o| o.passed))
}
