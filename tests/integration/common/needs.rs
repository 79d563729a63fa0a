//! What a test needs from outside itself: a throwaway server of scripts/services.sh, a
//! program, root, network namespaces. One helper, [`needs`], says what a missing one means:
//! under `LOADRIG_REQUIRE_ALL=1` (scripts/test.sh sets it, so a full run cannot skip
//! silently) the test fails, naming what is missing and how to get it; otherwise the test
//! is skipped and says so on the terminal, past the test harness's capture of its output.

use std::io::Write;
use std::path::PathBuf;

/// How to get the throwaway servers and their environment.
const SERVICES: &str = "scripts/services.sh up, then eval \"$(scripts/services.sh env)\"";

/// `found` when it is there. When it is `None`: under `LOADRIG_REQUIRE_ALL=1` the test
/// fails with "needs WHAT (HOW)"; otherwise it prints "skipped: needs WHAT (HOW)" and the
/// caller returns (the test passes, having checked nothing).
#[track_caller]
pub fn needs<T>(what: &str, how: &str, found: Option<T>) -> Option<T> {
    if found.is_some() {
        return found;
    }
    if std::env::var("LOADRIG_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("this test needs {what}, and LOADRIG_REQUIRE_ALL=1 requires it: {how}");
    }
    // Straight to the terminal: the harness captures eprintln! of a test that passes.
    let _ = writeln!(std::io::stderr(), "skipped: needs {what} ({how})");
    None
}

/// Environment variable `var` of the throwaway servers (`scripts/services.sh env`): a
/// server's URL, a CA file, a password.
#[track_caller]
pub fn server_url(var: &str) -> Option<String> {
    let value = std::env::var(var).ok().filter(|v| !v.is_empty());
    needs(var, SERVICES, value)
}

/// The first of `names` found on the PATH; `how` says how to install it.
#[track_caller]
pub fn program(names: &[&str], how: &str) -> Option<PathBuf> {
    needs(&names.join(" or "), how, which(names))
}

/// Root, for `what` (mounting a file system, starting servers of the test's own).
#[track_caller]
pub fn root(what: &str) -> Option<()> {
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    needs(
        &format!("root ({what})"),
        "run the tests as root, as scripts/test.sh does in CI",
        root.then_some(()),
    )
}

/// The first of `names` that is a file in a directory of the PATH.
pub fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|p| p.is_file())
}
