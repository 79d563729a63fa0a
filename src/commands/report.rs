//! `loadrig report`: one self-contained HTML page of run files, or of one sweep file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ReportArgs;
use crate::error::InputError;
use crate::plan::same_path;
use crate::report::html;
use crate::result;

/// Labels for result files: the file name, or the whole path when names repeat.
pub(super) fn labels(paths: &[PathBuf]) -> Vec<String> {
    let name = |p: &PathBuf| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    paths
        .iter()
        .map(|p| {
            let n = name(p);
            if paths.iter().filter(|q| name(q) == n).count() > 1 {
                p.display().to_string()
            } else {
                n
            }
        })
        .collect()
}

/// `loadrig report RUN.json... [-o OUT.html]`.
pub fn report(args: &ReportArgs) -> Result<ExitCode> {
    let out = args.out.clone().unwrap_or_else(|| {
        if args.runs.len() == 1 {
            args.runs[0].with_extension("html")
        } else {
            PathBuf::from("report.html")
        }
    });
    if let Some(p) = args.runs.iter().find(|p| same_path(p, &out)) {
        return Err(InputError::new(format!(
            "the report would overwrite its input '{}'",
            p.display()
        ))
        .help("name the report with -o FILE.html")
        .into());
    }
    let names = labels(&args.runs);
    let sweeps: Vec<&PathBuf> = args.runs.iter().filter(|p| is_sweep(p)).collect();
    let page = if let Some(first) = sweeps.first() {
        if args.runs.len() > 1 {
            return Err(InputError::new(format!(
                "'{}' is a sweep file: a sweep is reported alone",
                first.display()
            ))
            .help("loadrig report SWEEP.json -o SWEEP.html")
            .into());
        }
        html::render_sweep(&names[0], &result::sweep::read(first)?)?
    } else {
        let mut runs = Vec::new();
        for (path, label) in args.runs.iter().zip(names) {
            runs.push((label, result::read(path)?));
        }
        html::render(&runs)?
    };
    result::write_atomic(&out, page.as_bytes())?;
    println!("report: {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// Whether a file is a sweep file (`"kind": "sweep"`) rather than a run result; false for
/// anything unreadable, which the run reader then reports.
fn is_sweep(path: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Kind>(&t).ok())
        .is_some_and(|k| k.kind.as_deref() == Some("sweep"))
}
