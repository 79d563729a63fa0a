//! The HTML report: structure and escaping from the file itself, and the page as a browser
//! shows it (headless Chromium through chromedriver's WebDriver API): it renders, each plot
//! has its SVG, the console has no errors and the page makes no network request.

mod common;

use std::path::{Path, PathBuf};

use common::{Dir, PUT_ONLY};
use serde_json::{json, Value};

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
/// spectrum, per-interval counts, errors.
fn plots_for(ops: usize) -> usize {
    5 + ops
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
    for (path, ops) in [(&rw, 2), (&hostile, 1), (&both, 1)] {
        let html = std::fs::read_to_string(path).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert_eq!(
            count(&html, "<figure class=\"plot\""),
            plots_for(ops),
            "{}",
            path.display()
        );
        assert_eq!(count(&html, "<svg"), plots_for(ops), "{}", path.display());
        assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
        no_external_references(&html);
        for section in ["Summary", "Plots", "Load", "Host", "Resolved workload"] {
            assert!(html.contains(section), "{section} in {}", path.display());
        }
    }
    let html = std::fs::read_to_string(&rw).unwrap();
    assert!(html.contains("injected error"), "error messages are listed");
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

/// A WebDriver session on headless Chromium, through chromedriver.
struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

impl Browser {
    /// Start chromedriver and Chromium. Without them the test fails under scripts/test.sh
    /// (LOADRIG_REQUIRE_ALL=1) and is skipped, visibly, under a bare `cargo test`.
    fn start() -> Option<Browser> {
        let (driver, chromium) = match (
            which(&["chromedriver"]),
            which(&["chromium", "chromium-browser", "google-chrome"]),
        ) {
            (Some(d), Some(c)) => (d, c),
            _ => {
                let why = "chromium and chromedriver are not installed (Debian: apt-get install chromium chromium-driver)";
                if std::env::var("LOADRIG_REQUIRE_ALL").as_deref() == Ok("1") {
                    panic!("LOADRIG_REQUIRE_ALL=1 but {why}");
                }
                eprintln!("skipped: the headless browser test: {why}");
                return None;
            }
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(120)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().unwrap();
        let mut b = Browser {
            driver: child,
            base,
            session: String::new(),
            agent,
            _profile: profile,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let ready = b
                .agent
                .get(format!("{}/status", b.base))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "chromedriver did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let args = json!([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-dev-shm-usage",
            format!("--user-data-dir={}", b._profile.path().display()),
            "--window-size=1280,1000",
        ]);
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": args,
                "perfLoggingPrefs": {"enableNetwork": true, "enablePage": false},
            },
            "goog:loggingPrefs": {"browser": "ALL", "performance": "ALL"},
        }}});
        let v = b.post("/session", caps);
        b.session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        Some(b)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/session/{}{path}", self.base, self.session)
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let url = if path == "/session" {
            format!("{}/session", self.base)
        } else {
            self.url(path)
        };
        let mut r = self
            .agent
            .post(&url)
            .send_json(&body)
            .expect("WebDriver POST");
        r.body_mut()
            .with_config()
            .limit(200 << 20)
            .read_json()
            .expect("WebDriver JSON")
    }

    fn get(&self, path: &str) -> Value {
        let mut r = self
            .agent
            .get(self.url(path))
            .call()
            .expect("WebDriver GET");
        r.body_mut()
            .with_config()
            .limit(200 << 20)
            .read_json()
            .expect("WebDriver JSON")
    }

    fn goto(&self, file: &Path) -> String {
        let url = format!("file://{}", file.display());
        let v = self.post("/url", json!({ "url": url }));
        assert!(v["value"].is_null(), "navigation failed: {v}");
        url
    }

    fn eval(&self, script: &str) -> Value {
        let v = self.post("/execute/sync", json!({"script": script, "args": []}));
        v["value"].clone()
    }

    fn log(&self, kind: &str) -> Vec<Value> {
        let v = self.post("/se/log", json!({ "type": kind }));
        v["value"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("log {kind}: {v}"))
    }

    fn alert_open(&self) -> bool {
        let v = self.get("/alert/text");
        v["value"].is_string()
    }

    fn screenshot(&self, to: &Path) {
        let height = self
            .eval("return document.documentElement.scrollHeight")
            .as_u64()
            .unwrap_or(1000)
            .clamp(600, 16000);
        self.post("/window/rect", json!({"width": 1280, "height": height}));
        let v = self.get("/screenshot");
        let png = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            v["value"].as_str().expect("screenshot"),
        )
        .unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Check one page as the browser shows it; returns the page's text.
fn check_page(b: &Browser, path: &Path, plots: usize, min_tables: usize) -> String {
    // Reading a log drains it: start each page with empty ones (the browser's own start
    // page loads chrome:// resources before ours).
    b.log("performance");
    b.log("browser");
    let url = b.goto(path);
    let title = b.eval("return document.title");
    assert!(
        title.as_str().unwrap_or("").starts_with("loadrig report"),
        "{title}"
    );
    assert_eq!(b.eval("return document.readyState"), "complete");
    let n = |q: &str| {
        b.eval(&format!("return document.querySelectorAll('{q}').length"))
            .as_u64()
            .unwrap() as usize
    };
    assert_eq!(n("figure.plot"), plots, "{}", path.display());
    assert_eq!(n("figure.plot svg"), plots, "every plot has its SVG");
    assert_eq!(n("svg"), plots, "no other SVG");
    assert_eq!(n("table"), n("table"));
    assert!(n("table") >= min_tables, "summary, counts, setup tables");
    // Each SVG is laid out with a real size and holds drawn shapes.
    let drawn = b.eval(
        "return Array.from(document.querySelectorAll('figure.plot svg')).every(s => \
         s.getBoundingClientRect().width > 400 && s.getBoundingClientRect().height > 150 && \
         s.querySelectorAll('polyline, path, rect, line, circle').length > 3)",
    );
    assert_eq!(drawn, true, "every SVG is drawn in {}", path.display());
    assert_eq!(b.eval("return document.scripts.length"), 0);
    assert!(!b.alert_open(), "no alert in {}", path.display());

    // No network: no resource fetched, no request but the document itself.
    assert_eq!(
        b.eval("return performance.getEntriesByType('resource').length"),
        0,
        "resources fetched by {}",
        path.display()
    );
    let sent: Vec<(String, String)> = b
        .log("performance")
        .iter()
        .filter_map(|e| {
            let m: Value = serde_json::from_str(e["message"].as_str()?).ok()?;
            let p = &m["message"]["params"];
            (m["message"]["method"] == "Network.requestWillBeSent").then(|| {
                let s = |v: &Value| v.as_str().unwrap_or("").to_string();
                (s(&p["documentURL"]), s(&p["request"]["url"]))
            })
        })
        .collect();
    assert!(
        sent.iter().any(|(_, u)| u == &url),
        "the network log sees the page's own load: {sent:?}"
    );
    // Requests of our document, other than the document itself. (The browser's own
    // new-tab page loads chrome:// resources of its own meanwhile.)
    let requests: Vec<&String> = sent
        .iter()
        .filter(|(doc, u)| doc == &url && u != &url)
        .map(|(_, u)| u)
        .collect();
    assert!(
        requests.is_empty(),
        "requests from {}: {requests:?}",
        path.display()
    );

    let errors: Vec<Value> = b
        .log("browser")
        .into_iter()
        .filter(|e| e["level"] == "SEVERE" || e["level"] == "ERROR")
        .collect();
    assert!(
        errors.is_empty(),
        "console errors in {}: {errors:?}",
        path.display()
    );
    b.eval("return document.body.innerText")
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn reports_render_offline_in_headless_chromium() {
    let d = Dir::new();
    let (rw, hostile, both) = make_reports(&d);
    let Some(b) = Browser::start() else { return };

    let text = check_page(&b, &rw, plots_for(2), 4);
    assert!(text.contains("Throughput per interval"));
    assert!(text.contains("read") && text.contains("write"));
    let artifact = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts/report.png");
    b.screenshot(&artifact);
    eprintln!("screenshot: {}", artifact.display());

    // The hostile names render as text, and nothing ran.
    let text = check_page(&b, &hostile, plots_for(1), 4);
    assert!(text.contains("<script>alert(1)</script>"), "{text}");
    assert!(text.contains("<img src=x onerror=alert(2)>"), "{text}");
    assert_eq!(
        b.eval("return document.querySelectorAll('img, b').length"),
        0
    );

    let text = check_page(&b, &both, plots_for(1), 4);
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
