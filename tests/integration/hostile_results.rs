//! Result files from a hostile source, through `report`, `compare` and `export`: markup in
//! names, huge and impossible numbers, NaN, deep nesting, histograms that decode to nonsense
//! or claim huge sizes. Each gives a clear error (exit 2) or a safe report, never a panic,
//! a runaway allocation, or markup that reaches the HTML unescaped.

use crate::common::Dir;
use serde_json::{json, Value};

/// A real run's result, as a JSON value to damage.
fn base(d: &Dir) -> Value {
    d.ok(&[
        "run",
        "noop",
        "--target",
        "sleep://?latency=1ms",
        "--samples",
        "6",
        "--interval",
        "50ms",
        "-o",
        "base.json",
    ]);
    serde_json::from_str(&std::fs::read_to_string(d.join("base.json")).unwrap()).unwrap()
}

/// Every reader on `file`: each exits 0 or 2 (never a panic's 101 or a signal) and the
/// stderr of an error says what is wrong. Returns the exit codes.
fn every_reader(d: &Dir, file: &str) -> Vec<i32> {
    let commands: [Vec<&str>; 3] = [
        vec!["report", file, "-o", "out.html"],
        vec!["compare", "base.json", file],
        vec![
            "export",
            file,
            "--csv",
            "csv",
            "--hdr-log",
            "out.hlog",
            "--ycsb",
            "out.ycsb",
        ],
    ];
    commands
        .iter()
        .map(|args| {
            let out = d.loadrig(args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert!(matches!(code, Some(0 | 2)), "{args:?}: {code:?}\n{stderr}");
            assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            if code == Some(2) {
                assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
            }
            code.unwrap()
        })
        .collect()
}

fn write(d: &Dir, name: &str, v: &Value) {
    d.write(name, &serde_json::to_string(v).unwrap());
}

/// Every histogram of the file replaced by `h`.
fn with_histograms(mut v: Value, h: &str) -> Value {
    v["total"]["histogram"] = json!(h);
    v["operations"][0]["histogram"] = json!(h);
    for i in v["intervals"].as_array_mut().unwrap() {
        i["ops"][0]["histogram"] = json!(h);
    }
    v
}

#[test]
fn markup_in_names_is_escaped_in_the_report() {
    let d = Dir::new();
    let mut v = base(&d);
    let evil = "<script>alert(1)</script><img src=x onerror=alert(2)>";
    v["workload"]["name"] = json!(evil);
    v["operations"][0]["name"] = json!(evil);
    for i in v["intervals"].as_array_mut().unwrap() {
        i["ops"][0]["name"] = json!(evil);
    }
    v["notes"] = json!([evil]);
    v["target"]["url"] = json!(format!("sleep://{evil}"));
    write(&d, "evil.json", &v);
    assert_eq!(every_reader(&d, "evil.json"), [0, 0, 0]);
    let page = std::fs::read_to_string(d.join("out.html")).unwrap();
    assert!(!page.contains("<script>alert"), "unescaped script");
    assert!(!page.contains("<img src=x"), "unescaped img");
    assert!(page.contains("&lt;script&gt;alert(1)"));
}

#[test]
fn huge_and_impossible_numbers_give_an_error_or_a_report() {
    let d = Dir::new();
    let v = base(&d);
    let mut huge = v.clone();
    for k in ["ok", "errors", "rows"] {
        huge["total"][k] = json!(u64::MAX);
        huge["operations"][0][k] = json!(u64::MAX);
    }
    for i in huge["intervals"].as_array_mut().unwrap() {
        i["ok"] = json!(u64::MAX);
        i["ops"][0]["ok"] = json!(u64::MAX);
    }
    huge["measured_s"] = json!(1e308);
    huge["elapsed_s"] = json!(-1e308);
    write(&d, "huge.json", &huge);
    every_reader(&d, "huge.json");

    let mut times = v.clone();
    for i in times["intervals"].as_array_mut().unwrap() {
        i["start_s"] = json!(-1e308);
        i["end_s"] = json!(1e308);
    }
    write(&d, "times.json", &times);
    assert_eq!(
        every_reader(&d, "times.json")[2],
        2,
        "export refuses the times"
    );
    let out = d.loadrig(&["export", "times.json", "--hdr-log", "t.hlog"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an interval of a run"));

    // Numbers JSON cannot hold, and nesting deeper than any result.
    let text = serde_json::to_string(&v).unwrap();
    d.write(
        "nan.json",
        &text.replacen("\"measured_s\":", "\"measured_s\":NaN,\"x\":", 1),
    );
    d.write(
        "big.json",
        &text.replacen("\"missed_starts\":0", "\"missed_starts\":1e400", 1),
    );
    d.write("deep.json", &("[".repeat(100_000) + &"]".repeat(100_000)));
    for f in ["nan.json", "big.json", "deep.json"] {
        assert_eq!(every_reader(&d, f), [2, 2, 2], "{f}");
    }
}

/// HdrHistogram V2 (cookie 0x1c849313) with `header` fields and `payload`, deflated
/// (cookie 0x1c849314), base64.
fn v2(payload_len: i32, sigfig: i32, highest: i64, payload: &[u8]) -> String {
    use base64::Engine as _;
    use std::io::Write;
    let mut plain = Vec::new();
    plain.extend(0x1c84_9313u32.to_be_bytes());
    plain.extend(payload_len.to_be_bytes());
    plain.extend(0i32.to_be_bytes());
    plain.extend(sigfig.to_be_bytes());
    plain.extend(1i64.to_be_bytes());
    plain.extend(highest.to_be_bytes());
    plain.extend(1f64.to_be_bytes());
    plain.extend(payload);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&plain).unwrap();
    let deflated = z.finish().unwrap();
    let mut bytes = 0x1c84_9314u32.to_be_bytes().to_vec();
    bytes.extend((deflated.len() as i32).to_be_bytes());
    bytes.extend(deflated);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn nonsense_histograms_are_refused_without_a_large_allocation() {
    let d = Dir::new();
    let v = base(&d);
    let cases = [
        ("not base64", "////".to_string()),
        ("garbage", "SGVsbG8gd29ybGQh".to_string()),
        // Claims a 2 GB payload and holds none: the decoder would allocate it first.
        ("claims 2 GB", v2(i32::MAX, 3, 1 << 40, &[])),
        // 64 MiB of zeros that deflate to a few KB.
        ("inflates", v2(64 << 20, 3, 1 << 40, &vec![0; 64 << 20])),
        // A count of i64::MIN (zig-zag LEB128 of 9 bytes of 0xff): negating it overflows.
        ("overflow", v2(9, 3, 1 << 40, &[0xff; 9])),
    ];
    for (what, h) in cases {
        write(&d, "h.json", &with_histograms(v.clone(), &h));
        let codes = every_reader(&d, "h.json");
        assert_eq!(codes, [2, 2, 2], "{what}");
        let out = d.loadrig(&["report", "h.json", "-o", "h.html"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("histogram"), "{what}: {stderr}");
    }
}
