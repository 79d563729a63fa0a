//! The HTML report: structure and escaping from the file itself, and the page as a browser
//! shows it (headless Chromium through chromedriver's WebDriver API): it renders, each plot
//! has its SVG, the console has no errors and the page makes no network request.

use crate::common::browser;
use std::path::{Path, PathBuf};

use crate::common::{Dir, PUT_ONLY};
use browser::{check_page, Browser};

const TWO_OPS: &str = r#"name = "read-write"
description = "a light mix of reads and writes"
target = "sleep://?latency=uniform(1ms..3ms)&errors=0.02"

[load]
clients = 3
warmup = "300ms"
interval = "100ms"
samples = 12

[[op]]
name = "read"
weight = 3
nop = {}

[[op]]
name = "write"
nop = {}
"#;

const HOSTILE: &str = r#"name = "<b>bold</b> & co"
description = "<img src=x onerror=alert(2)> \"quoted\" 'single'"
target = "sleep://?latency=1ms&errors=0.1"

[load]
samples = 6
interval = "50ms"

[[op]]
name = "<script>alert(1)</script>"
nop = {}
"#;

/// Plots in a report: throughput, one latency-over-time per operation, distribution,
/// spectrum, per-interval counts, errors; and under the validity table, the rig over time
/// for each run.
fn plots_for(ops: usize, runs: usize) -> usize {
    5 + ops + runs
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// No attribute of the page points at the network.
fn no_external_references(html: &str) {
    let lower = html.to_ascii_lowercase();
    for attr in ["src=", "href=", "url("] {
        for (i, _) in lower.match_indices(attr) {
            let after = lower[i + attr.len()..].trim_start_matches(['"', '\'', ' ']);
            assert!(
                !after.starts_with("http:")
                    && !after.starts_with("https:")
                    && !after.starts_with("//"),
                "external reference near: {}",
                &html[i..(i + 80).min(html.len())]
            );
        }
    }
    assert!(!lower.contains("<script"), "the report has no script");
    assert!(!lower.contains("@import"));
}

fn make_reports(d: &Dir) -> (PathBuf, PathBuf, PathBuf) {
    d.write("rw.toml", TWO_OPS);
    d.write("hostile.toml", HOSTILE);
    d.ok(&["run", "rw.toml", "-o", "rw.json", "--report", "rw.html"]);
    d.ok(&[
        "run",
        "hostile.toml",
        "-o",
        "hostile.json",
        "--report",
        "hostile.html",
    ]);
    for (file, latency) in [("a.json", "1ms"), ("b.json", "2ms")] {
        let target = format!("sleep://?latency={latency}");
        d.ok(&[
            "run",
            "noop",
            "--target",
            &target,
            "--samples",
            "8",
            "--interval",
            "50ms",
            "-o",
            file,
        ]);
    }
    d.ok(&["report", "a.json", "b.json", "-o", "both.html"]);
    (
        d.join("rw.html"),
        d.join("hostile.html"),
        d.join("both.html"),
    )
}

#[test]
fn report_is_self_contained_with_one_svg_per_plot() {
    let d = Dir::new();
    let (rw, hostile, both) = make_reports(&d);
    for (path, ops, runs) in [(&rw, 2, 1), (&hostile, 1, 1), (&both, 1, 2)] {
        let html = std::fs::read_to_string(path).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(
            count(&html, "<figure class=\"plot\""),
            plots_for(ops, runs),
            "{}",
            path.display()
        );
        assert_eq!(
            count(&html, "<svg"),
            plots_for(ops, runs),
            "{}",
            path.display()
        );
        assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
        no_external_references(&html);
        for section in ["Summary", "Plots", "Load", "Host", "Resolved workload"] {
            assert!(html.contains(section), "{section} in {}", path.display());
        }
    }
    let html = std::fs::read_to_string(&rw).unwrap();
    assert!(html.contains("injected error"), "error messages are listed");
    // The read's failures (about 2 % of some 1,000) and how long they took.
    let r = d.result("rw.json");
    let failed = r.operations[0]
        .failed_latency
        .as_ref()
        .expect("reads failed");
    assert!(html.contains("How long failures took"));
    let row = format!("<td class=\"text\">read</td><td>{}</td>", failed.count);
    assert!(html.contains(&row), "{row}");
    assert!(failed.min_ns >= 1_000_000, "sleep's 1 ms floor: {failed:?}");
    assert!(html.contains("Latency over time: read") && html.contains("Latency over time: write"));
    let html = std::fs::read_to_string(&both).unwrap();
    assert!(
        html.contains("a.json · nop") && html.contains("b.json · nop"),
        "runs overlaid"
    );
}

#[test]
fn strings_from_workloads_and_errors_are_escaped() {
    let d = Dir::new();
    d.write("hostile.toml", HOSTILE);
    d.ok(&["run", "hostile.toml", "-o", "h.json", "--report", "h.html"]);
    let html = std::fs::read_to_string(d.join("h.html")).unwrap();
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(!html.contains("<img src=x"));
    assert!(!html.contains("<b>bold</b>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(html.contains("&lt;b&gt;bold&lt;/b&gt; &amp; co"));
}

#[test]
fn report_bad_input_exits_2_and_writes_nothing() {
    let d = Dir::new();
    let (_, err) = d.code(2, &["report", "missing.json"]);
    assert!(err.contains("could not read 'missing.json'"), "{err}");
    d.write("x.json", "[1, 2]");
    let (_, err) = d.code(2, &["report", "x.json", "-o", "x.html"]);
    assert!(err.contains("not a loadrig result file"), "{err}");
    assert!(!d.join("x.html").exists());
    let (_, err) = d.code(2, &["report", "x.json", "-o", "x.json"]);
    assert!(err.contains("would overwrite its input"), "{err}");
    let (_, err) = d.code(2, &["report"]);
    assert!(err.contains("RUN.json"), "{err}");

    d.ok(&["run", "noop", "--ops", "20", "-o", "r.json"]);
    let (_, err) = d.code(
        2,
        &[
            "run", "noop", "--ops", "20", "-o", "s.json", "--report", "s.json",
        ],
    );
    assert!(err.contains("that is where the result goes"), "{err}");
    let out = d.ok(&["report", "r.json"]);
    assert!(out.contains("report: r.html"), "{out}");
    assert!(d.join("r.html").exists());
}

#[test]
fn reports_render_offline_in_headless_chromium() {
    let d = Dir::new();
    let (rw, hostile, both) = make_reports(&d);
    let Some(b) = Browser::start() else { return };

    let text = check_page(&b, &rw, plots_for(2, 1), 4);
    assert!(text.contains("Throughput per interval"));
    assert!(text.contains("read") && text.contains("write"));
    let artifact = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts/report.png");
    b.screenshot(&artifact);
    eprintln!("screenshot: {}", artifact.display());

    // The hostile names render as text, and nothing ran.
    let text = check_page(&b, &hostile, plots_for(1, 1), 4);
    assert!(text.contains("<script>alert(1)</script>"), "{text}");
    assert!(text.contains("<img src=x onerror=alert(2)>"), "{text}");
    assert_eq!(
        b.eval("return document.querySelectorAll('img, b').length"),
        0
    );

    let text = check_page(&b, &both, plots_for(1, 2), 4);
    assert!(text.contains("a.json") && text.contains("b.json"));
}

/// A clients sweep reported afterwards, and a growth study with its report written by
/// `loadrig sweep --report`.
fn make_sweep_reports(d: &Dir) -> (PathBuf, PathBuf) {
    d.ok(&[
        "sweep",
        "noop",
        "--target",
        "sleep://?latency=5ms&usl=0.1,0.005",
        "--vary",
        "clients=1,2,4,8",
        "--duration",
        "300ms",
        "--interval",
        "100ms",
        "-o",
        "sweep.json",
    ]);
    let out = d.ok(&["report", "sweep.json", "-o", "s.html"]);
    assert!(out.contains("report: s.html"), "{out}");
    d.write("put.toml", PUT_ONLY);
    let out = d.ok(&[
        "sweep",
        "put.toml",
        "--target",
        "sleep://?latency=0ms&growth=linear:20us",
        "--growth-batch",
        "50",
        "--growth-limit",
        "300",
        "-o",
        "g.json",
        "--report",
        "g.html",
    ]);
    assert!(out.contains("report: g.html"), "{out}");
    (d.join("s.html"), d.join("g.html"))
}

#[test]
fn sweep_reports_plot_the_points_and_the_models() {
    let d = Dir::new();
    let (s, g) = make_sweep_reports(&d);

    // Clients sweep: throughput (with the USL curve) and latency against clients.
    let html = std::fs::read_to_string(&s).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    no_external_references(&html);
    assert_eq!(count(&html, "<figure class=\"plot\""), 2);
    assert_eq!(count(&html, "<svg"), 2);
    assert!(
        html.contains("Throughput against clients") && html.contains("Latency against clients")
    );
    assert_eq!(count(&html, "<tbody>"), 3, "points, sweep, host");
    // Four points in the table.
    let points = html.split("id=\"points\"").nth(1).unwrap();
    let points = &points[..points.find("</table>").unwrap()];
    assert_eq!(count(points, "<tr><td>"), 4, "{points}");
    // The model in the console's words, in the summary and under the throughput plot.
    let sweep = loadrig::result::sweep::read(&d.join("sweep.json")).unwrap();
    let usl = sweep.models.usl.as_ref().expect("a USL model");
    if usl.curve.is_empty() {
        assert!(count(&html, "USL fit: ") >= 2, "the verdict is given");
    } else {
        assert!(count(&html, "USL fit: λ") >= 2, "the parameters are given");
        assert!(html.contains("σ") && html.contains("κ") && html.contains("R²"));
        assert!(
            html.contains("USL fit (R²"),
            "the curve is in the plot's legend"
        );
    }

    // Growth study: the growth plot and its class.
    let html = std::fs::read_to_string(&g).unwrap();
    no_external_references(&html);
    assert_eq!(count(&html, "<figure class=\"plot\""), 3);
    assert_eq!(count(&html, "<svg"), 3);
    assert!(html.contains("id=\"growth\""));
    assert!(html.contains("Time per batch against records stored"));
    let study = loadrig::result::sweep::read(&d.join("g.json")).unwrap();
    let class = study
        .models
        .growth
        .expect("a growth model")
        .fit
        .class
        .name();
    assert!(
        html.contains(&format!("): {class} per batch of 50")),
        "summary"
    );
    assert!(
        html.contains(&format!("{class} fit: ")),
        "the plot's legend"
    );

    // A sweep is reported alone, and its report is not the sweep file.
    d.ok(&["run", "noop", "--ops", "20", "-o", "r.json"]);
    let (_, err) = d.code(2, &["report", "r.json", "sweep.json", "-o", "x.html"]);
    assert!(err.contains("a sweep is reported alone"), "{err}");
    assert!(!d.join("x.html").exists());
    let (_, err) = d.code(
        2,
        &[
            "sweep",
            "noop",
            "--target",
            "sleep://?latency=1ms",
            "--vary",
            "clients=1,2",
            "--ops",
            "10",
            "-o",
            "t.json",
            "--report",
            "t.json",
        ],
    );
    assert!(err.contains("where the sweep file goes"), "{err}");
}

#[test]
fn run_report_names_the_latency_modes() {
    let d = Dir::new();
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=0.34*100ms,0.33*200ms,0.33*300ms",
        "--clients",
        "20",
        "--duration",
        "1500ms",
        "-o",
        "m.json",
        "--report",
        "m.html",
    ]);
    let r = d.result("m.json");
    let m = r.latency_modes.expect("latency modes");
    assert!(m.modes.len() > 1, "{m:?}");
    let html = std::fs::read_to_string(d.join("m.html")).unwrap();
    assert_eq!(count(&html, "<p class=\"modes\">latency modes at "), 1);
    assert!(
        html.contains(" — periodic, every ")
            || html.contains(" — not periodic")
            || html.contains(" — two clusters")
    );
    assert!(
        !html.contains("note: latency modes"),
        "said once, not again as a note"
    );
}

#[test]
fn sweep_reports_render_offline_in_headless_chromium() {
    let d = Dir::new();
    let (s, g) = make_sweep_reports(&d);
    let Some(b) = Browser::start() else { return };
    let text = check_page(&b, &s, 2, 3);
    assert!(text.contains("Throughput against clients"));
    assert!(text.contains("USL fit"));
    let text = check_page(&b, &g, 3, 3);
    assert!(text.contains("Time per batch against records stored"));
    assert!(text.contains("growth ("));
}
