//! nginx's `stub_status` page, when the target names it (`?status=/nginx_status`): accepted
//! and handled connections and requests are counters, active, reading, writing and waiting
//! connections gauges. Read over a keep-alive connection of the observer's own.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::reading::{number, Reading};
use crate::error::InputError;
use crate::targets::endpoint::Endpoint;
use crate::targets::socket;
use crate::targets::tls::{NetStream, Tls};
use crate::targets::TargetUrl;

pub struct HttpPlan {
    pub host: String,
    pub port: u16,
    tls: Tls,
    /// The status page's path, when the URL names one.
    pub status: Option<String>,
    pub shown: String,
}

impl HttpPlan {
    pub fn parse(url: &TargetUrl) -> Result<HttpPlan, InputError> {
        let tls = Tls::from_url(url, url.scheme == "https")?;
        let ep = Endpoint::parse(url)?;
        let status = url.options.get("status").cloned();
        if let Some(s) = &status {
            if !s.starts_with('/') {
                return Err(InputError::new(format!(
                    "status={s}: expected a path on the target's server, like status=/nginx_status"
                )));
            }
        }
        Ok(HttpPlan {
            port: ep
                .port
                .unwrap_or(if url.scheme == "https" { 443 } else { 80 }),
            host: ep.host,
            tls,
            status,
            shown: ep.shown,
        })
    }
}

pub struct NginxSource {
    stream: Option<NetStream>,
    request: Vec<u8>,
    pub queries_sent: u64,
}

async fn open(plan: &HttpPlan) -> Result<NetStream, String> {
    let connecting = async {
        let tcp = socket::connect((plan.host.as_str(), plan.port))
            .await
            .map_err(|e| e.to_string())?;
        plan.tls
            .wrap(&plan.host, tcp, &plan.shown)
            .await
            .map_err(|e| e.message)
    };
    tokio::time::timeout(Duration::from_secs(5), connecting)
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
}

impl NginxSource {
    /// `Err` when the page cannot be read (its status and why).
    pub async fn connect(plan: &HttpPlan, path: &str) -> Result<NginxSource, String> {
        let host = if plan.host.contains(':') {
            format!("[{}]:{}", plan.host, plan.port)
        } else {
            format!("{}:{}", plan.host, plan.port)
        };
        Ok(NginxSource {
            stream: Some(open(plan).await?),
            request: format!(
                "GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: loadrig-observer\r\n\r\n"
            )
            .into_bytes(),
            queries_sent: 0,
        })
    }

    /// The page read once; reconnects when the server closed the last connection.
    pub async fn read(&mut self, plan: &HttpPlan) -> Result<Reading, String> {
        self.queries_sent += 1;
        let mut stream = match self.stream.take() {
            Some(s) => s,
            None => open(plan).await?,
        };
        stream
            .write_all(&self.request)
            .await
            .map_err(|e| e.to_string())?;
        let (code, body, keep) = response(&mut stream).await?;
        if keep {
            self.stream = Some(stream);
        }
        if code != 200 {
            return Err(format!("the status page answered {code}"));
        }
        parse_status(&body).ok_or_else(|| "the status page is not nginx's stub_status".to_string())
    }
}

/// One response: its status code, its body, and whether the connection stays open.
async fn response(stream: &mut NetStream) -> Result<(u16, String, bool), String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut parsed = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head) = parsed.parse(&buf).map_err(|e| e.to_string())? {
            let header = |name: &str| {
                parsed
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| String::from_utf8_lossy(h.value).to_ascii_lowercase())
            };
            let close = header("connection").is_some_and(|c| c.contains("close"));
            if let Some(len) = header("content-length").and_then(|l| l.trim().parse::<usize>().ok())
            {
                if buf.len() >= head + len {
                    let body = String::from_utf8_lossy(&buf[head..head + len]).into_owned();
                    return Ok((parsed.code.unwrap_or(0), body, !close));
                }
            } else if buf.len() > head && header("transfer-encoding").is_none() {
                // No length: the body runs to the end of the connection.
                let code = parsed.code.unwrap_or(0);
                let n = stream
                    .read_to_end(&mut buf)
                    .await
                    .map_err(|e| e.to_string())?;
                let _ = n;
                return Ok((
                    code,
                    String::from_utf8_lossy(&buf[head..]).into_owned(),
                    false,
                ));
            }
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// stub_status's text:
/// ```text
/// Active connections: 2
/// server accepts handled requests
///  16 16 31
/// Reading: 0 Writing: 1 Waiting: 1
/// ```
fn parse_status(text: &str) -> Option<Reading> {
    let mut r = Reading::default();
    let mut lines = text.lines();
    let active = lines.next()?.strip_prefix("Active connections:")?;
    r.gauges
        .insert("stub_status.active".into(), number(active)?);
    lines.next()?;
    let totals: Vec<f64> = lines
        .next()?
        .split_whitespace()
        .filter_map(number)
        .collect();
    for (name, v) in ["accepts", "handled", "requests"].iter().zip(&totals) {
        r.counters.insert(format!("stub_status.{name}"), *v);
    }
    let states: Vec<&str> = lines.next()?.split_whitespace().collect();
    for pair in states.chunks(2) {
        if let [name, v] = pair {
            let name = name.trim_end_matches(':').to_ascii_lowercase();
            r.gauges.insert(format!("stub_status.{name}"), number(v)?);
        }
    }
    (totals.len() == 3).then_some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_status_page() {
        let r = parse_status(
            "Active connections: 2 \nserver accepts handled requests\n 16 16 31 \nReading: 0 Writing: 1 Waiting: 1 \n",
        )
        .unwrap();
        assert_eq!(r.counters["stub_status.requests"], 31.0);
        assert_eq!(r.counters["stub_status.accepts"], 16.0);
        assert_eq!(r.gauges["stub_status.active"], 2.0);
        assert_eq!(r.gauges["stub_status.waiting"], 1.0);
        assert!(parse_status("<html>not found</html>").is_none());
    }
}
