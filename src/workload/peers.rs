//! `[peers]`: other systems a workload's steps may run on (`on = "NAME"`), each an
//! http:// or redis:// URL in which `{param}` is replaced now and `${VAR}` is read from the
//! environment when the run is planned, as for the target.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Source;
use crate::error::{redact, InputError};
use crate::vocab::Family;

/// One peer: its name, its URL with parameters substituted (`${VAR}` not yet expanded, so
/// a secret read from the environment is never kept), and the family of steps it runs.
#[derive(Debug, Clone)]
pub struct Peer {
    pub name: String,
    pub url: String,
    /// `None` when the scheme comes from an environment variable that is not set yet: the
    /// planner checks it once the URL is expanded.
    pub family: Option<Family>,
    /// `file:line:column` of the URL, for errors found when the run is planned.
    pub location: String,
}

/// The `[peers]` table, in name order.
pub fn compile(
    source: &Source<'_>,
    params: &BTreeMap<String, toml::Value>,
    declared: &BTreeMap<String, Spanned<String>>,
) -> Result<Vec<Peer>, InputError> {
    let mut peers = Vec::new();
    for (name, text) in declared {
        let location = source.at(text.span().start);
        let url = substitute(text.get_ref(), params).map_err(|e| e.at(location.clone()))?;
        let scheme = scheme_of(&url);
        let family = match scheme.as_deref() {
            Some("http") => Some(Family::Http),
            Some("redis") => Some(Family::Redis),
            None if url.starts_with("${") => None,
            _ => {
                return Err(InputError::new(format!(
                    "peer '{name}': expected an http:// or redis:// URL, found {}",
                    scheme.map_or("no scheme".to_string(), |s| format!("{s}://"))
                ))
                .at(location))
            }
        };
        peers.push(Peer {
            name: name.clone(),
            url,
            family,
            location,
        });
    }
    Ok(peers)
}

/// The URL's scheme, reading a leading `${VAR}` from the environment when it is set.
fn scheme_of(url: &str) -> Option<String> {
    let text = match url.strip_prefix("${").and_then(|r| r.split_once('}')) {
        Some((var, rest)) => format!("{}{rest}", std::env::var(var).ok()?),
        None => url.to_string(),
    };
    text.split_once("://").map(|(s, _)| s.to_string())
}

/// Replace each `{param}` by the parameter's value; `${VAR}` stays for the planner.
fn substitute(text: &str, params: &BTreeMap<String, toml::Value>) -> Result<String, InputError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let env = open > 0 && rest.as_bytes()[open - 1] == b'$';
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            return Err(InputError::new(format!(
                "in \"{}\": a {{ without its }}",
                redact(text)
            )));
        };
        out.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        if env {
            out.push_str(&rest[open..=close]);
        } else {
            match params.get(name.trim()) {
                Some(toml::Value::String(s)) => out.push_str(s),
                Some(v) => out.push_str(&v.to_string()),
                None => {
                    return Err(InputError::new(format!(
                        "in \"{}\": unknown parameter '{name}'",
                        redact(text)
                    ))
                    .help("a peer URL may use {param} from [params] or [switches] and ${VAR} from the environment"))
                }
            }
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_substituted_and_env_is_kept() {
        let params = BTreeMap::from([("port".to_string(), toml::Value::Integer(8080))]);
        let url = substitute("http://u:${PW}@127.0.0.1:{port}/x", &params).unwrap();
        assert_eq!(url, "http://u:${PW}@127.0.0.1:8080/x");
        let e = substitute("http://u:s3cret@h/{nope}", &params).unwrap_err();
        assert_eq!(
            e.message,
            "in \"http://u:***@h/{nope}\": unknown parameter 'nope'"
        );
    }
}
