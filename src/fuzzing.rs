//! Entry points for fuzzing: each takes arbitrary bytes and runs one parser of hostile
//! input the way the commands do. The cargo-fuzz targets in `fuzz/` call them, and
//! `tests/integration/fuzz_corpus.rs` feeds them the kept corpus on stable Rust, so a panic
//! found once stays found. Errors are the expected answer to bad input; only a panic is a
//! failure.

use std::collections::BTreeMap;
use std::path::Path;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::analysis::{checks, compare};
use crate::assemble::ShardFile;
use crate::error::redact;
use crate::report::{console, export, html, ycsb};
use crate::targets::{with_target_type, Target, TargetUrl};
use crate::workload::template::{GenState, Template};
use crate::workload::{self, Source};

/// A workload file: parsed and compiled (parameters, generators, operations, checks).
pub fn workload(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let source = Source {
            path: "fuzz.toml",
            text,
        };
        let _ = workload::compile(&source, &[]);
    }
}

/// A generator template (`k{uniform 0..100}`): compiled, then a few values drawn.
pub fn generator(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut slots = 0;
    if let Ok(t) = Template::compile(text, &BTreeMap::new(), &mut slots) {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut state = GenState::new(0, 2, slots);
        let (mut s, mut b) = (String::new(), Vec::new());
        for _ in 0..3 {
            s.clear();
            b.clear();
            t.render_str(&mut rng, &mut state, &mut s);
            t.render_bytes(&mut rng, &mut state, &mut b);
        }
    }
}

/// A `--check` expression (`p99 < 20ms`).
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = checks::parse_or_why(text);
    }
}

/// A target URL: split, redacted, and its options checked by the target it names (only
/// the network targets: the embedded ones open their file or folder here).
pub fn target_url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = redact(text);
    if let Ok(url) = TargetUrl::parse(text) {
        if !matches!(url.scheme.as_str(), "sqlite" | "fs" | "dbm") {
            let _ = open_target(&url);
        }
    }
}

fn open_target(url: &TargetUrl) -> anyhow::Result<()> {
    with_target_type!(url.scheme.as_str(), T => {
        T::from_url(url, &BTreeMap::new()).map(drop).map_err(anyhow::Error::from)
    })
}

/// A result file, through everything that reads one: the HTML report, compare (with
/// itself), the checks, the CSV tables, the HdrHistogram log and YCSB's text.
pub fn result_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(r) = crate::result::parse(text, Path::new("fuzz.json")) else {
        return;
    };
    let _ = html::render(&[("fuzz.json".to_string(), r.clone())]);
    let opts = compare::Options {
        resamples: 50,
        seed: 1,
        ..compare::Options::default()
    };
    let _ = compare::compare(&r, "a.json", &r, "b.json", &opts);
    for c in ["p99 < 20ms", "errors < 1%", "throughput > 100"] {
        if let Ok(c) = checks::parse(c) {
            let _ = checks::evaluate(&c, &r);
        }
    }
    let _ = export::intervals_csv(&r);
    let _ = export::operations_csv(&r);
    let _ = export::hdr_log(&r);
    let _ = ycsb::text(&r);
}

/// Shard result files as `loadrig merge` reads them: the input is the files one after
/// another, each ending at a line `---`; those that parse are merged, whole and partial, and
/// a merged run is written and summarised.
pub fn merge(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files: Vec<ShardFile> = text
        .split("\n---\n")
        .take(8)
        .enumerate()
        .filter_map(|(i, part)| {
            let path = std::path::PathBuf::from(format!("s{i}.json"));
            let result = crate::result::parse(part, &path).ok()?;
            Some(ShardFile { path, result })
        })
        .collect();
    if files.is_empty() {
        return;
    }
    let copy = files
        .iter()
        .map(|f| ShardFile {
            path: f.path.clone(),
            result: f.result.clone(),
        })
        .collect();
    for (files, partial) in [(files, false), (copy, true)] {
        if let Ok(merged) = crate::assemble::merge(files, partial) {
            let _ = serde_json::to_vec_pretty(&merged);
            let _ = console::summary(&merged);
        }
    }
}
