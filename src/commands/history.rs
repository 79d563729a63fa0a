//! `loadrig history DIR`: the result files of one workload on one target, in order, and
//! where throughput or a percentile shifted (`analysis::history`).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::analysis::changepoint;
use crate::analysis::history::{self, HistoryRun};
use crate::cli::{Format, HistoryArgs, HistoryOrder};
use crate::error::InputError;
use crate::result::{self, RunResult};

/// `loadrig history DIR`.
pub fn history(args: &HistoryArgs) -> Result<ExitCode> {
    let files = json_files(&args.dir)?;
    let mut runs = Vec::new();
    for path in &files {
        let r = result::read(path).map_err(|e| {
            InputError::new(format!("{e:#}")).help(format!(
                "history reads every .json file in '{}' as a run's result file: move other files out of it",
                args.dir.display()
            ))
        })?;
        runs.push((path.clone(), r));
    }
    let (workload, target, mut chosen) = choose(runs, args)?;
    order(&mut chosen, args.order)?;
    let names: Vec<String> = chosen
        .iter()
        .map(|(p, _)| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let series = chosen
        .iter()
        .zip(&names)
        .map(|((_, r), name)| HistoryRun::of(name, r))
        .collect();
    let order_name = match args.order {
        HistoryOrder::Time => "time",
        HistoryOrder::Label => "label",
    };
    let h = history::analyse(
        &workload,
        &target,
        order_name,
        series,
        &changepoint::Options::default(),
    );
    if let Some(out) = &args.report {
        let page = crate::report::history::html(&h)?;
        result::write_atomic(out, page.as_bytes())?;
    }
    let text = match args.format {
        Format::Table => crate::report::history::table(&h),
        Format::Markdown => crate::report::history::markdown(&h),
        Format::Json => crate::report::history::json(&h),
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The `.json` files directly in `dir`, sorted by name.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("could not read the folder '{}'", dir.display()))
        .map_err(|e| InputError::new(format!("{e:#}")))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(
            InputError::new(format!("no result files (.json) in '{}'", dir.display()))
                .help(format!(
                    "write runs there with `loadrig run WORKLOAD -o {}/NAME.json --label COMMIT`",
                    dir.display()
                ))
                .into(),
        );
    }
    Ok(files)
}

/// The target a run is grouped by: its URL without options (`sleep://?latency=1ms` and
/// `sleep://?latency=2ms` are one target whose setting changed).
fn target_of(r: &RunResult) -> String {
    let url = crate::targets::redact(&r.target.url);
    url.split('?').next().unwrap_or_default().to_string()
}

type Runs = Vec<(PathBuf, RunResult)>;

/// The runs of the one workload and target asked for (or the only one there is).
fn choose(runs: Runs, args: &HistoryArgs) -> Result<(String, String, Runs)> {
    let kept: Runs = runs
        .into_iter()
        .filter(|(_, r)| args.workload.as_ref().is_none_or(|w| &r.workload.name == w))
        .filter(|(_, r)| args.target.as_ref().is_none_or(|t| &target_of(r) == t))
        .collect();
    let mut groups: Vec<(String, String, usize)> = Vec::new();
    for (_, r) in &kept {
        let key = (r.workload.name.clone(), target_of(r));
        match groups.iter_mut().find(|g| (&g.0, &g.1) == (&key.0, &key.1)) {
            Some(g) => g.2 += 1,
            None => groups.push((key.0, key.1, 1)),
        }
    }
    match groups.as_slice() {
        [] => Err(InputError::new(format!(
            "no result file in '{}' matches{}{}",
            args.dir.display(),
            args.workload
                .as_ref()
                .map_or(String::new(), |w| format!(" --workload {w}")),
            args.target
                .as_ref()
                .map_or(String::new(), |t| format!(" --target {t}"))
        ))
        .help("leave out --workload/--target to see which workloads and targets the folder holds")
        .into()),
        [(w, t, _)] => Ok((w.clone(), t.clone(), kept)),
        several => {
            let list: Vec<String> = several
                .iter()
                .map(|(w, t, n)| format!("{w} on {t} ({n} runs)"))
                .collect();
            Err(InputError::new(format!(
                "'{}' holds runs of several workloads or targets: {}",
                args.dir.display(),
                list.join(", ")
            ))
            .help("choose one with --workload NAME (and --target URL, without its options)")
            .into())
        }
    }
}

/// Sort by start time, or by label (every run must have one).
fn order(runs: &mut Runs, by: HistoryOrder) -> Result<()> {
    match by {
        HistoryOrder::Time => runs.sort_by(|a, b| a.1.started_at.cmp(&b.1.started_at)),
        HistoryOrder::Label => {
            if let Some((p, _)) = runs.iter().find(|(_, r)| r.label.is_none()) {
                return Err(InputError::new(format!(
                    "--order label: '{}' has no label",
                    p.display()
                ))
                .help("order by time (the default), or give every run a label with `loadrig run --label TEXT`")
                .into());
            }
            runs.sort_by(|a, b| {
                natural(
                    a.1.label.as_deref().unwrap_or_default(),
                    b.1.label.as_deref().unwrap_or_default(),
                )
                .then_with(|| a.1.started_at.cmp(&b.1.started_at))
            });
        }
    }
    Ok(())
}

/// Compare labels with their runs of digits as numbers: `v9` before `v10`.
fn natural(a: &str, b: &str) -> Ordering {
    fn chunks(s: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, text)) if *d == digit => text.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for (x, y) in ca.iter().zip(&cb) {
        let o = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((_, p), (_, q)) => p.cmp(q),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    ca.len().cmp(&cb.len())
}

#[cfg(test)]
mod tests {
    use super::natural;

    #[test]
    fn labels_sort_with_numbers_as_numbers() {
        let mut v = vec!["v10", "v9", "v1.2", "v1.10", "abc", "v09b"];
        v.sort_by(|a, b| natural(a, b));
        assert_eq!(v, ["abc", "v1.2", "v1.10", "v9", "v09b", "v10"]);
    }
}
