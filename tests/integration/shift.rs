//! The shift function in `loadrig compare`, against the `sleep` target, whose latency is
//! known: 1 ms against 2 ms moves every quantile by about +1 ms.

use crate::common::locks::{hold, Shared};
use crate::common::Dir;
use serde_json::Value;

#[test]
fn one_millisecond_more_moves_every_decile_by_about_one_millisecond() {
    // It judges timings: it takes turns with the runs that burn the CPU and the other judges.
    let _cpu = hold(&[Shared::Cpu]);
    let d = Dir::new();
    d.sleep_runs_together(&[("a.json", "1ms"), ("b.json", "2ms")], 20);
    let (out, _) = d.code(0, &["compare", "a.json", "b.json", "--format", "json"]);
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let s = &v["shift_function"];
    let ops = s["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 1, "{s}");
    assert_eq!(ops[0]["operation"], "nop");
    assert_eq!(ops[0]["base_runs"], 1);
    let points = ops[0]["points"].as_array().unwrap();
    let quantiles: Vec<f64> = points
        .iter()
        .map(|p| p["quantile"].as_f64().unwrap())
        .collect();
    assert_eq!(
        quantiles,
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999]
    );
    for p in points
        .iter()
        .filter(|p| p["quantile"].as_f64().unwrap() <= 0.9)
    {
        let diff = p["diff_ns"].as_f64().unwrap();
        assert!((800_000.0..1_200_000.0).contains(&diff), "{p}");
        assert!(p["ci_low_ns"].as_f64().unwrap() > 0.0, "{p}");
    }
    // Nearly all of each side's mass lies apart: the CDFs differ by almost 1, and the mass
    // moved by about 1 ms.
    assert!(ops[0]["ks"].as_f64().unwrap() > 0.9, "{}", ops[0]);
    let w = ops[0]["wasserstein_ns"].as_f64().unwrap();
    assert!((800_000.0..1_300_000.0).contains(&w), "{w}");
    assert!(s["notes"][0]
        .as_str()
        .unwrap()
        .contains("one run on a side"));

    let (table, _) = d.code(0, &["compare", "a.json", "b.json"]);
    assert!(table.contains("shift function: new − base"), "{table}");
    assert!(table.contains("nop: Kolmogorov-Smirnov"), "{table}");
    let p50 = table
        .lines()
        .find(|l| l.trim_start().starts_with("p50 "))
        .unwrap();
    assert!(p50.ends_with("slower"), "{p50}");
    let (md, _) = d.code(0, &["compare", "a.json", "b.json", "--format", "markdown"]);
    assert!(
        md.contains("| quantile | base | new | difference | 95% interval | shift |"),
        "{md}"
    );
}
