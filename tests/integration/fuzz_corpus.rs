//! Every input kept in `fuzz/corpus/TARGET/` (seeds, what the fuzzer found interesting,
//! and the inputs that once panicked) through the same entry points the fuzz targets call,
//! on stable Rust: a panic fails the test and names the file.

use std::path::Path;

type Entry = fn(&[u8]);

const TARGETS: [(&str, Entry); 6] = [
    ("workload", loadrig::fuzzing::workload),
    ("generator", loadrig::fuzzing::generator),
    ("check", loadrig::fuzzing::check),
    ("target_url", loadrig::fuzzing::target_url),
    ("result_file", loadrig::fuzzing::result_file),
    ("merge", loadrig::fuzzing::merge),
];

#[test]
fn every_corpus_input_runs_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, entry) in TARGETS {
        let dir = root.join(name);
        let mut n = 0;
        for file in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = file.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let run = std::panic::catch_unwind(|| entry(&data));
            assert!(run.is_ok(), "{} panicked", path.display());
            n += 1;
        }
        assert!(n > 0, "{} has no corpus", dir.display());
    }
}
