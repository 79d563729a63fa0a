//! `loadrig history` over small result files of the `sleep` target, whose latency is known:
//! five runs at 1 ms then five at 2 ms, labelled v1..v10, must show one change at v6.

use crate::common::locks::{hold, Shared};
use crate::common::Dir;
use serde_json::Value;

/// A short run of `sleep://?latency=L` labelled `label`, written to `runs/FILE`.
fn run(d: &Dir, file: &str, latency: &str, label: &str) {
    let target = format!("sleep://?latency={latency}");
    let out = format!("runs/{file}");
    d.ok(&[
        "run", "noop", "--target", &target, "-d", "300ms", "--label", label, "-o", &out,
    ]);
}

#[test]
fn a_step_from_one_to_two_milliseconds_is_found_at_its_label() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    for k in 1..=10 {
        let latency = if k <= 5 { "1ms" } else { "2ms" };
        // File names that sort differently from the labels (r10 before r2).
        run(&d, &format!("r{k}.json"), latency, &format!("v{k}"));
    }
    assert_eq!(d.result("runs/r1.json").label.as_deref(), Some("v1"));

    for order in ["time", "label"] {
        let (out, _) = d.code(
            0,
            &[
                "history", "runs", "--order", order, "--format", "json", "--report", "h.html",
            ],
        );
        let h: Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(h["workload"], "noop");
        assert_eq!(h["target"], "sleep://");
        let labels: Vec<&str> = h["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["label"].as_str().unwrap())
            .collect();
        assert_eq!(
            labels,
            ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"]
        );
        let p50 = |k: usize| h["runs"][k]["p50_ns"].as_f64().unwrap();
        assert!((1e6..1.5e6).contains(&p50(0)) && (2e6..2.5e6).contains(&p50(9)));
        let metric = |name: &str| {
            h["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["metric"] == name)
                .unwrap()["change_points"]
                .as_array()
                .unwrap()
                .clone()
        };
        for (name, lo, hi) in [("p50", 0.8, 1.2), ("throughput", -0.6, -0.4)] {
            let cps = metric(name);
            assert_eq!(cps.len(), 1, "{name}: {cps:?}");
            assert_eq!(cps[0]["index"], 5, "{name}: {cps:?}");
            let change = cps[0]["change"].as_f64().unwrap();
            assert!((lo..hi).contains(&change), "{name}: {change}");
            assert!(cps[0]["p_value"].as_f64().unwrap() < 0.05);
        }
    }
    let page = std::fs::read_to_string(d.join("h.html")).unwrap();
    assert_eq!(page.matches("<svg").count(), 5, "one plot per metric");
    assert!(
        page.contains("<td>v6</td>"),
        "the change point's label is listed"
    );

    let (table, _) = d.code(0, &["history", "runs"]);
    let p50 = table.lines().find(|l| l.starts_with("p50 ")).expect(&table);
    assert!(
        p50.contains("#6") && p50.contains("v6") && p50.ends_with("worse"),
        "{p50}"
    );
}

#[test]
fn bad_folders_exit_2_with_a_clear_message() {
    let d = Dir::new();
    std::fs::create_dir(d.join("empty")).unwrap();
    let (_, err) = d.code(2, &["history", "empty"]);
    assert!(err.contains("no result files (.json) in 'empty'"), "{err}");
    let (_, err) = d.code(2, &["history", "missing"]);
    assert!(err.contains("could not read the folder 'missing'"), "{err}");

    std::fs::create_dir(d.join("bad")).unwrap();
    d.write("bad/broken.json", "{ not json");
    let (_, err) = d.code(2, &["history", "bad"]);
    assert!(
        err.contains("broken.json") && err.contains("not a loadrig result file"),
        "{err}"
    );

    // Two targets in one folder: say which, and how to choose.
    run(&d, "a.json", "1ms", "one");
    d.ok(&[
        "run",
        "noop",
        "--target",
        "noop://",
        "-d",
        "200ms",
        "-o",
        "runs/b.json",
    ]);
    let (_, err) = d.code(2, &["history", "runs"]);
    assert!(
        err.contains("noop on sleep:// (1 runs)") && err.contains("--target"),
        "{err}"
    );
    let (_, err) = d.code(
        2,
        &["history", "runs", "--target", "noop://", "--order", "label"],
    );
    assert!(err.contains("b.json' has no label"), "{err}");
    let (out, _) = d.code(0, &["history", "runs", "--target", "sleep://"]);
    assert!(out.contains("at least 4"), "{out}");

    let before = d.files();
    let (_, err) = d.code(2, &["run", "noop", "--target", "noop://", "--label", " "]);
    assert!(err.contains("--label"), "{err}");
    assert_eq!(d.files(), before, "nothing written");
}
