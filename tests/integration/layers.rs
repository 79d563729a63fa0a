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

/// Every top-level module a file's code names through the crate: `crate::NAME` (imports
/// and paths alike, `$crate::` too), every module named inside a grouped import
/// `crate::{NAME, OTHER::{..}, ..}` at any depth of braces, and `ALIAS::NAME` where the file
/// names the crate `ALIAS` (`use crate::{self as ALIAS}`, `use crate as ALIAS`). Comments are
/// left out, so prose may name any module.
fn mentions(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let (mut found, mut aliases) = (BTreeSet::new(), Vec::new());
    for after in following(&code, "use crate as") {
        aliases.push(ident(after.trim_start()).to_string());
    }
    for after in following(&code, "crate") {
        named_after(after, &mut found, &mut aliases);
    }
    let mut seen = 0;
    while seen < aliases.len() {
        let alias = aliases[seen].clone();
        for after in following(&code, &alias) {
            named_after(after, &mut found, &mut aliases);
        }
        seen += 1;
    }
    found.remove("");
    found
}

/// The modules named by what follows the crate's name (or an alias of it): `::NAME`,
/// `::{NAME, ..}`; and an alias, `::{self as ALIAS}`, to look for as well.
fn named_after(after: &str, found: &mut BTreeSet<String>, aliases: &mut Vec<String>) {
    let mut alias = |text: &str| {
        if let Some(name) = text.trim_start().strip_prefix("as ") {
            let name = ident(name.trim_start()).to_string();
            if !name.is_empty() && !aliases.contains(&name) {
                aliases.push(name);
            }
        }
    };
    let Some(path) = after.trim_start().strip_prefix("::") else {
        return;
    };
    let path = path.trim_start();
    let Some(group) = path.strip_prefix('{') else {
        found.insert(ident(path).to_string());
        return;
    };
    for item in group_items(group) {
        if ident(item) == "self" {
            alias(&item["self".len()..]);
        } else {
            found.insert(ident(item).to_string());
        }
    }
}

/// What follows each occurrence of the word `word` in `code` (not inside a longer name).
fn following<'a>(code: &'a str, word: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    code.match_indices(word).filter_map(move |(i, _)| {
        let part_of_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let before = code[..i].chars().next_back();
        let after = &code[i + word.len()..];
        let whole = !before.is_some_and(part_of_name) && !after.starts_with(part_of_name);
        whole.then_some(after)
    })
}

/// The name at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The items of a brace group, `text` starting right after its `{`: split at the commas
/// outside inner braces, up to the `}` that closes it; each trimmed.
fn group_items(text: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(text[start..i].trim());
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.retain(|item| !item.is_empty());
    items
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
        "src/vocab/ imports {vocab:?}; it may import only {allowed:?}"
    );
}

#[test]
fn the_result_contract_imports_only_the_layers_below_it() {
    let edges = graph();
    // `observe` sits in the targets' layer: the result holds its records of the server.
    let allowed: BTreeSet<String> = [
        "error", "duration", "vocab", "workload", "stats", "targets", "observe", "engine",
    ]
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
fn the_scanner_sees_every_module_a_grouped_import_or_a_crate_alias_names() {
    let names = |text: &str| -> Vec<String> { mentions(text).into_iter().collect() };
    assert_eq!(names("use crate::engine::Mode;"), ["engine"]);
    assert_eq!(
        names("use crate::{engine, stats::x};"),
        ["engine", "stats"],
        "a grouped import"
    );
    assert_eq!(
        names(
            "use crate::{\n    analysis::{compare::{self, Method}, shift},\n    result::RunResult,\n    vocab,\n};"
        ),
        ["analysis", "result", "vocab"],
        "nested braces, over lines"
    );
    assert_eq!(
        names("use crate::{self as c};\nfn f() { c::engine::run(); }"),
        ["engine"],
        "a path through the crate's alias"
    );
    assert_eq!(
        names("use crate as c;\nuse c::{stats, report::html};"),
        ["report", "stats"],
        "the crate renamed, then a grouped import through it"
    );
    assert_eq!(
        names("use crate::{vocab::Op, self as k};\nlet x = k::plan::p; // crate::{commands}"),
        ["plan", "vocab"],
        "self beside other items; comments left out"
    );
    // A name that only ends in `crate` is not the crate, nor is prose in a string.
    assert_eq!(
        names("let subcrate::x = 1; mycrate::{engine}; let s = \"the crate as a whole\"; a::b();"),
        Vec::<String>::new()
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
    let allowed: BTreeSet<String> = ["error", "vocab", "clock", "duration", "stats", "targets"]
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
