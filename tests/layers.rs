//! The import graph between the top-level modules of src/ has no cycle: every layer builds
//! only on the layers below it (docs/architecture.md lists them in order).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module of a source file: `src/engine/client.rs` → `engine`, `src/cli.rs` → `cli`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (name != "lib" && name != "main").then_some(name)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `crate::NAME` a file's code mentions (imports and paths alike, `$crate::` too);
/// comments are left out, so prose may name any module.
fn mentions(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            found.insert(name);
        }
        rest = after;
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(from) = module_of(&src, file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read source");
        let to = edges.entry(from.clone()).or_default();
        for name in mentions(&text) {
            if name != from && modules.contains(&name) {
                to.insert(name);
            }
        }
    }
    edges
}

/// A cycle through the graph, if there is one, as the modules along it.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

#[test]
fn module_imports_have_no_cycle() {
    let edges = graph();
    if let Some(cycle) = find_cycle(&edges) {
        panic!(
            "the modules import each other in a cycle: {}\n(every module imports only from layers below it: see docs/architecture.md)",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn the_vocabulary_imports_nothing_above_it() {
    let edges = graph();
    let allowed: BTreeSet<String> = ["error"].iter().map(|s| s.to_string()).collect();
    let vocab = edges.get("vocab").cloned().unwrap_or_default();
    assert!(
        vocab.is_subset(&allowed),
        "src/vocab.rs imports {vocab:?}; it may import only {allowed:?}"
    );
}

#[test]
fn the_result_contract_imports_only_the_layers_below_it() {
    let edges = graph();
    let allowed: BTreeSet<String> = ["error", "vocab", "workload", "stats", "engine"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let result = edges.get("result").cloned().unwrap_or_default();
    assert!(
        result.is_subset(&allowed),
        "src/result/ imports {result:?}; it may import only {allowed:?} (analysis and report read results, not the other way round)"
    );
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    edges.entry("a".into()).or_default().insert("b".into());
    edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(find_cycle(&edges), None);
    edges.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&edges),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_emulators_import_only_the_layers_below_the_targets() {
    let edges = graph();
    let allowed: BTreeSet<String> = ["error", "vocab", "clock", "workload", "stats"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let emulate = edges.get("emulate").cloned().unwrap_or_default();
    assert!(
        emulate.is_subset(&allowed),
        "src/emulate/ imports {emulate:?}; it is in the targets' layer and may import only {allowed:?}"
    );
}

#[test]
fn the_observer_imports_only_the_targets_layer_and_below() {
    let edges = graph();
    let allowed: BTreeSet<String> = ["error", "vocab", "clock", "workload", "stats", "targets"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(
        edges.contains_key("observe"),
        "src/observe/ is where the observer lives"
    );
    let observe = edges["observe"].clone();
    assert!(
        observe.is_subset(&allowed),
        "src/observe/ imports {observe:?}; it is in the targets' layer and may import only {allowed:?}"
    );
    let above: Vec<&String> = edges
        .iter()
        .filter(|(m, to)| {
            ["targets", "emulate", "stats", "workload"].contains(&m.as_str())
                && to.contains("observe")
        })
        .map(|(m, _)| m)
        .collect();
    assert!(
        above.is_empty(),
        "{above:?} import src/observe/, which sits beside the targets, above them"
    );
}
