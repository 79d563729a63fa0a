//! The data of the page's events, made once per interval however many pages watch: each
//! operation's counts and percentiles over the interval (p50, p90, p99, p99.9, max), the
//! distribution of the measured latency so far, the rig's figures and fairness, and every
//! other field the interval record carries (a stage, the server's series) passed through
//! as it is, for the page to draw generically. The server's figures come later, in an event
//! of their own per interval ([`server`]), once the observer's reading has joined it.

use serde_json::{json, Map, Value};

use crate::report::plot::server as server_plot;
use crate::result::{IntervalRecord, RunResult};
use crate::stats::{new_hist, Hist, LatencySummary};

/// The fields of an interval record the page shows by name; any other is `extra`.
const KNOWN: &[&str] = &[
    "index",
    "start_s",
    "end_s",
    "warmup",
    "ok",
    "errors",
    "ops",
    "rig",
    "fairness",
    "per_client",
];

/// The quantiles the distribution is drawn through (then the maximum).
const SPECTRUM: &[f64] = &[
    0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99999,
];

fn at(h: &Hist, q: f64) -> u64 {
    if h.is_empty() {
        0
    } else {
        h.value_at_quantile(q)
    }
}

/// One interval for the page. `totals` (one per operation) take in its measured latency.
pub fn interval(r: IntervalRecord, hists: Option<Vec<Hist>>, totals: &mut Vec<Hist>) -> Value {
    let hists = hists.unwrap_or_else(|| {
        r.ops
            .iter()
            .map(|o| o.histogram.decode().unwrap_or_else(|_| new_hist()))
            .collect()
    });
    totals.resize_with(r.ops.len(), new_hist);
    let ops: Vec<Value> = r
        .ops
        .iter()
        .zip(&hists)
        .map(|(o, h)| {
            json!({
                "name": o.name, "ok": o.ok, "errors": o.errors, "by_class": o.errors_by_class,
                "p50": at(h, 0.5), "p90": at(h, 0.9), "p99": at(h, 0.99), "p999": at(h, 0.999),
                "max": if h.is_empty() { 0 } else { h.max() },
            })
        })
        .collect();
    if !r.warmup {
        for (t, h) in totals.iter_mut().zip(&hists) {
            let _ = t.add(h);
        }
    }
    json!({
        "index": r.index, "start_s": r.start_s, "end_s": r.end_s, "warmup": r.warmup,
        "ok": r.ok, "errors": r.errors, "ops": ops, "rig": r.rig, "fairness": r.fairness,
        "dist": distribution(&r, totals),
        "extra": extra(r),
    })
}

/// Each operation's measured latency so far as (quantile, ns) points, and all together
/// when there are several.
fn distribution(r: &IntervalRecord, totals: &[Hist]) -> Vec<Value> {
    let curve = |name: &str, h: &Hist| {
        let mut points: Vec<(f64, u64)> = SPECTRUM.iter().map(|&q| (q, at(h, q))).collect();
        points.push((1.0, h.max()));
        json!({ "name": name, "count": h.len(), "points": points })
    };
    let mut out: Vec<Value> = r
        .ops
        .iter()
        .zip(totals)
        .filter(|(_, h)| !h.is_empty())
        .map(|(o, h)| curve(&o.name, h))
        .collect();
    if out.len() > 1 {
        let mut all = new_hist();
        for h in totals {
            let _ = all.add(h);
        }
        out.push(curve("all operations", &all));
    }
    out
}

/// The record's fields beyond the ones shown by name, as it serialises them (without its
/// encoded histograms and clients' counts, which the page does not use).
fn extra(mut r: IntervalRecord) -> Value {
    r.ops.clear();
    r.per_client.clear();
    let Ok(Value::Object(all)) = serde_json::to_value(&r) else {
        return Value::Object(Map::new());
    };
    Value::Object(
        all.into_iter()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .collect(),
    )
}

/// One interval's server figures, once they have joined its record: the figures the HTML
/// report's server panels plot (`report::plot::server`: the clients' throughput and
/// latency beside the server's rate, time per statement, CPU and run queue, and the wait
/// classes' shares), and the server's whole record for the page's other series. `None`
/// when the interval has none.
pub fn server(r: &IntervalRecord) -> Option<Value> {
    let one = std::slice::from_ref(r);
    let p = server_plot::points(one).pop()?;
    Some(json!({
        "index": r.index, "start_s": r.start_s, "end_s": r.end_s, "warmup": r.warmup,
        "ok_per_s": p.ok_per_s, "p50_ms": p.p50_ms, "p99_ms": p.p99_ms,
        "rate_label": server_plot::rate_label(one), "rate": p.server_rate,
        "ms_per_call": p.server_ms_per_call, "cpu_cores": p.cpu_cores,
        "run_queue": p.run_queue, "rig_cores": p.rig_cores, "waits": p.waits,
        "server": r.server,
    }))
}

fn latency(l: &LatencySummary) -> Value {
    json!({"count": l.count, "mean": l.mean_ns, "p50": l.p50_ns, "p90": l.p90_ns, "p99": l.p99_ns,
           "p999": l.p999_ns, "max": l.max_ns})
}

/// The finished run as the page's closing table shows it.
pub fn summary(r: &RunResult) -> Value {
    let op = |o: &crate::result::OpResult| {
        json!({"name": o.name, "ok": o.ok, "errors": o.errors, "per_s": o.throughput_per_s,
               "by_class": o.errors_by_class, "latency": latency(&o.latency)})
    };
    json!({
        "status": r.status,
        "elapsed_s": r.elapsed_s,
        "measured_s": r.measured_s,
        "ops": r.operations.iter().map(op).collect::<Vec<_>>(),
        "total": op(&r.total),
        "verdict": r.validity.as_ref().map(|v| v.line()),
        "notes": r.notes,
        "shards": r.shards,
        "collect": r.collect,
        "label": r.label,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{EncodedHistogram, IntervalOp};

    fn record(warmup: bool, values: &[u64]) -> IntervalRecord {
        let mut h = new_hist();
        for v in values {
            h.record(*v).unwrap();
        }
        IntervalRecord {
            index: 1,
            start_s: 0.0,
            end_s: 1.0,
            warmup,
            ok: values.len() as u64,
            errors: 0,
            ops: vec![IntervalOp {
                name: "get".into(),
                ok: values.len() as u64,
                errors: 0,
                errors_by_class: Default::default(),
                p50_ns: at(&h, 0.5),
                p99_ns: at(&h, 0.99),
                max_ns: h.max(),
                histogram: EncodedHistogram::encode(&h),
            }],
            rig: None,
            fairness: None,
            per_client: vec![3, 4],
            ran_whole: None,
            stage: None,
            clients: None,
            offered: None,
            server: None,
        }
    }

    #[test]
    fn percentiles_of_the_interval_and_the_measured_distribution_so_far() {
        let mut totals = Vec::new();
        let values: Vec<u64> = (1..=1000).map(|v| v * 1000).collect();
        let warm = interval(record(true, &[5_000_000]), None, &mut totals);
        assert!(warm["ops"][0]["max"].as_u64().unwrap() >= 5_000_000);
        assert!(
            warm["dist"].as_array().unwrap().is_empty(),
            "warm-up is not measured"
        );
        let v = interval(record(false, &values), None, &mut totals);
        let op = &v["ops"][0];
        let near = |field: &str, want: u64| {
            let got = op[field].as_u64().unwrap();
            assert!(
                got.abs_diff(want) <= want / 500,
                "{field}: {got} for {want}"
            );
        };
        near("p50", 500_000);
        near("p90", 900_000);
        near("p99", 990_000);
        near("p999", 999_000);
        near("max", 1_000_000);
        assert_eq!(totals[0].len(), 1000);
        assert_eq!(v["dist"][0]["count"], 1000);
        // Per-client counts are not for the page; nothing else is left over.
        assert_eq!(v["extra"], json!({}));
    }
}
