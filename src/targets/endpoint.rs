//! The `user:password@host:port/path` part of a network target's URL, percent-decoded.
//!
//! Shared by the server targets (postgres://, mysql://, ...). The password is kept apart
//! and never shown: [`Endpoint::shown`] is the redacted URL for messages.

use std::time::Duration;

use super::{redact, TargetUrl};
use crate::duration;
use crate::error::InputError;

/// Where a server listens and who to log in as.
#[derive(Clone)]
pub struct Endpoint {
    pub user: Option<String>,
    pub password: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The path without its leading `/` (a database name), decoded; may be empty.
    pub path: String,
    /// The whole URL with the password replaced by `***`, for messages.
    pub shown: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Endpoint {
    pub fn parse(url: &TargetUrl) -> Result<Endpoint, InputError> {
        let shown = redact(&format!("{}://{}", url.scheme, url.location));
        let (authority, path) = match url.location.split_once('/') {
            Some((a, p)) => (a, p),
            None => (url.location.as_str(), ""),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((user, pass)) => (Some(decode(user, &shown)?), Some(decode(pass, &shown)?)),
                None => (Some(decode(u, &shown)?), None),
            },
            None => (None, None),
        };
        let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
            // [::1]:5432
            let Some((h, after)) = rest.split_once(']') else {
                return Err(InputError::new(format!(
                    "{shown}: unclosed '[' in the host"
                )));
            };
            (h.to_string(), after.strip_prefix(':'))
        } else {
            match hostport.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (hostport.to_string(), None),
            }
        };
        // `?host=` (libpq's: a PostgreSQL socket directory) wins over the authority's host,
        // which may itself be percent-encoded (`%2Frun%2Fpostgresql`).
        let host = match url.options.get("host") {
            Some(h) => decode(h, &shown)?,
            None => decode(&host, &shown)?,
        };
        if host.is_empty() {
            return Err(InputError::new(format!(
                "{shown}: no host; write {}://USER:PASSWORD@127.0.0.1:PORT/DB",
                url.scheme
            )));
        }
        let port = match port {
            None | Some("") => None,
            Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0).ok_or_else(|| {
                InputError::new(format!(
                    "{shown}: port '{p}' is not a number from 1 to 65535"
                ))
            })?),
        };
        Ok(Endpoint {
            user: user.filter(|u| !u.is_empty()),
            password,
            host,
            port,
            path: decode(path.trim_end_matches('/'), &shown)?,
            shown,
        })
    }

    /// `connect_timeout` from the URL: a duration ("2s", "500ms") or plain seconds as in
    /// libpq; `default` when absent.
    pub fn connect_timeout(url: &TargetUrl, default: Duration) -> Result<Duration, InputError> {
        let Some(text) = url.options.get("connect_timeout") else {
            return Ok(default);
        };
        let t = match text.parse::<f64>() {
            Ok(secs) if secs > 0.0 && secs.is_finite() => Duration::from_secs_f64(secs),
            Ok(_) => Duration::ZERO,
            Err(_) => duration::parse(text, "connect_timeout")?,
        };
        if t.is_zero() {
            return Err(InputError::new(format!(
                "connect_timeout={text}: expected a positive duration, like 5s"
            )));
        }
        Ok(t)
    }
}

/// Percent-decode one URL component (a password may hold `@`, `:` or `/` as %40, %3A, %2F).
fn decode(text: &str, shown: &str) -> Result<String, InputError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => {
                    return Err(InputError::new(format!(
                        "{shown}: a '%' in the URL is not followed by two hex digits"
                    ))
                    .help("write a literal % as %25"))
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out)
        .map_err(|_| InputError::new(format!("{shown}: a URL part decodes to invalid UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(url: &str) -> Result<Endpoint, InputError> {
        Endpoint::parse(&TargetUrl::parse(url).unwrap())
    }

    #[test]
    fn splits_and_decodes() {
        let e = ep("postgres://bob:p%40ss%3Aw@127.0.0.1:5433/my%20db?connect_timeout=2").unwrap();
        assert_eq!(e.user.as_deref(), Some("bob"));
        assert_eq!(e.password.as_deref(), Some("p@ss:w"));
        assert_eq!(e.host, "127.0.0.1");
        assert_eq!(e.port, Some(5433));
        assert_eq!(e.path, "my db");
        assert_eq!(e.shown, "postgres://bob:***@127.0.0.1:5433/my%20db");
        assert_eq!(format!("{e:?}"), e.shown);
        let e = ep("mysql://[::1]:3306/").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.user), ("::1", Some(3306), None));
    }

    #[test]
    fn bad_parts_are_input_errors_without_the_password() {
        for url in [
            "postgres://u:secret@:5432/db",
            "postgres://u:secret@h:99999/db",
            "postgres://u:secret@h:5432/d%zz",
        ] {
            let e = ep(url).unwrap_err();
            assert!(!e.to_string().contains("secret"), "{e}");
        }
    }

    #[test]
    fn connect_timeout_accepts_seconds_or_durations() {
        let t = |u: &str| {
            Endpoint::connect_timeout(&TargetUrl::parse(u).unwrap(), Duration::from_secs(5))
        };
        assert_eq!(t("postgres://h/db").unwrap(), Duration::from_secs(5));
        assert_eq!(
            t("postgres://h/db?connect_timeout=2").unwrap(),
            Duration::from_secs(2)
        );
        assert_eq!(
            t("postgres://h/db?connect_timeout=250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert!(t("postgres://h/db?connect_timeout=0").is_err());
        assert!(t("postgres://h/db?connect_timeout=soon").is_err());
    }
}
