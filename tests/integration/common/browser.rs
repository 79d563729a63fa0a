//! Headless Chromium through chromedriver's WebDriver API, for the tests of HTML pages
//! (the `report` and `study` modules): a page renders, each plot has its SVG, the console has
//! no errors and the page makes no network request.
#![allow(dead_code)]

use std::path::Path;

use serde_json::{json, Value};

use super::needs;

/// A WebDriver session on headless Chromium, through chromedriver.
pub struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
    agent: ureq::Agent,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Start chromedriver and Chromium. Without them the test fails under scripts/test.sh
    /// (LOADRIG_REQUIRE_ALL=1) and is skipped, visibly, under a bare `cargo test`.
    pub fn start() -> Option<Browser> {
        Browser::start_with(&[])
    }

    /// [`Browser::start`] with more command-line arguments for Chromium (a proxy that
    /// blocks the network, say).
    pub fn start_with(extra: &[String]) -> Option<Browser> {
        let how = "Debian: apt-get install chromium chromium-driver; scripts/test.sh does, as root";
        let driver = needs::program(&["chromedriver"], how)?;
        let chromium = needs::program(&["chromium", "chromium-browser", "google-chrome"], how)?;
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
        let mut args = json!([
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
        if let Some(a) = args.as_array_mut() {
            a.extend(extra.iter().map(|e| json!(e)));
        }
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

    pub fn url(&self, path: &str) -> String {
        format!("{}/session/{}{path}", self.base, self.session)
    }

    pub fn post(&self, path: &str, body: Value) -> Value {
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

    pub fn get(&self, path: &str) -> Value {
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

    pub fn goto(&self, file: &Path) -> String {
        let url = format!("file://{}", file.display());
        self.open(&url);
        url
    }

    /// Navigate to `url`, insisting that the navigation succeeds.
    pub fn open(&self, url: &str) {
        let v = self.post("/url", json!({ "url": url }));
        assert!(v["value"].is_null(), "navigation to {url} failed: {v}");
    }

    /// Navigate to `url`; the WebDriver's answer (an error when the page cannot load).
    pub fn try_open(&self, url: &str) -> Value {
        self.post("/url", json!({ "url": url }))
    }

    pub fn eval(&self, script: &str) -> Value {
        let v = self.post("/execute/sync", json!({"script": script, "args": []}));
        v["value"].clone()
    }

    pub fn log(&self, kind: &str) -> Vec<Value> {
        let v = self.post("/se/log", json!({ "type": kind }));
        v["value"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("log {kind}: {v}"))
    }

    pub fn alert_open(&self) -> bool {
        let v = self.get("/alert/text");
        v["value"].is_string()
    }

    pub fn screenshot(&self, to: &Path) {
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
pub fn check_page(b: &Browser, path: &Path, plots: usize, min_tables: usize) -> String {
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
