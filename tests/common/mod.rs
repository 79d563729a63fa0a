//! Helpers shared by the integration tests: run the real binary in a temp folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use loadrig::report::result::{self, RunResult};

pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.join(name);
        std::fs::write(&p, text).expect("write file");
        p
    }

    /// Run `loadrig ARGS` in this folder.
    pub fn loadrig(&self, args: &[&str]) -> Output {
        assert_cmd::Command::cargo_bin("loadrig")
            .expect("binary")
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .expect("run loadrig")
    }

    /// Run and insist on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.loadrig(args);
        assert!(
            out.status.success(),
            "loadrig {args:?} failed with {:?}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn result(&self, name: &str) -> RunResult {
        result::read(&self.join(name)).expect("result file")
    }
}

/// A workload that only writes `count`-free sequential keys: every op stores one new record.
pub const PUT_ONLY: &str = r#"
name = "put-only"
description = "each operation stores a new record"

[params]
size = 100

[[op]]
name = "put"
kv.put = { key = "r{seq}", value = "{bytes size}" }
"#;

/// The value of a server variable set by `scripts/services.sh env`, or `None` after printing
/// "skipped: VAR not set". With `LOADRIG_REQUIRE_ALL=1` (the README test command) a
/// missing variable fails the test instead, so CI never passes by skipping.
pub fn server_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var("LOADRIG_REQUIRE_ALL").as_deref() != Ok("1"),
                "{var} is not set and LOADRIG_REQUIRE_ALL=1: start the servers with scripts/services.sh up and eval \"$(scripts/services.sh env)\""
            );
            println!("skipped: {var} not set");
            None
        }
    }
}
