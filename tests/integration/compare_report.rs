//! `loadrig compare … --report FILE.html`: the comparison as a page, with each operation's
//! shift function plotted and its figures beside it, equal to what `--format json` says.

use crate::common::Dir;

#[test]
fn the_page_plots_a_known_shift_with_the_figures_compare_computes() {
    let d = Dir::new();
    // Every latency 300 µs longer on the new side, run at the same time.
    d.sleep_runs_together(&[("base.json", "1ms"), ("new.json", "1.3ms")], 12);
    let json = d.ok(&[
        "compare",
        "base.json",
        "new.json",
        "--format",
        "json",
        "--report",
        "cmp.html",
    ]);
    let c: serde_json::Value = serde_json::from_str(&json).unwrap();
    let op = &c["shift_function"]["operations"][0];
    let points = op["points"].as_array().unwrap();
    assert_eq!(points.len(), 12);

    let html = std::fs::read_to_string(d.join("cmp.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
    assert_eq!(html.matches("<figure class=\"plot\"").count(), 1);
    let at = html.find("<figure class=\"plot\" id=\"shift-0\">").unwrap();
    let figure = &html[at..at + html[at..].find("</figure>").unwrap()];
    assert_eq!(figure.matches("<svg").count(), 1);
    for legend in [
        "noise band ±10 % of BASE",
        "simultaneous 95 % interval",
        "difference of quantiles (Harrell-Davis)",
    ] {
        assert!(figure.contains(legend), "no legend {legend}");
    }
    // The x axis names the quantiles.
    for label in ["p10", "p50", "p90", "p95", "p99", "p99.9"] {
        assert!(figure.contains(&format!(">{label}<")), "no label {label}");
    }
    // The figures under the plot are compare's own.
    let labels = [
        "p10", "p20", "p30", "p40", "p50", "p60", "p70", "p80", "p90", "p95", "p99", "p99.9",
    ];
    for (p, label) in points.iter().zip(labels) {
        let f = |k: &str| p[k].as_f64().unwrap();
        let row = format!(
            "<tr><td>{label}</td><td>{:.0} ns</td><td>{:.0} ns</td><td>{:+.0} ns</td>",
            f("base_ns"),
            f("new_ns"),
            f("diff_ns")
        );
        assert!(figure.contains(&row), "no row {row}");
    }
    // Ground truth: the body of the distribution moved by about +300 µs.
    let median = points[4]["diff_ns"].as_f64().unwrap();
    assert!((200_000.0..400_000.0).contains(&median), "{median}");
    assert!(points[..9]
        .iter()
        .all(|p| p["diff_ns"].as_f64().unwrap() > 0.0));

    // The page never replaces a compared file.
    let (_, err) = d.code(
        2,
        &["compare", "base.json", "new.json", "--report", "new.json"],
    );
    assert!(err.contains("would overwrite a compared file"), "{err}");
}
