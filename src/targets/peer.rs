//! Peers: the other systems a workload's steps may run on (`on = "NAME"`), beside the
//! primary target. A peer is an http:// or redis:// server; the engine is generic over the
//! primary target's type, and holds peers as this small enum over the two.

use super::http::{Http, HttpSession};
use super::redis::{Redis, RedisSession};
use super::{expand_env, redact, Params, Session, Target, TargetUrl};
use crate::error::InputError;
use crate::vocab::{Family, Op, OpError, Outcome};

/// A configured peer, shared by all clients.
pub enum PeerTarget {
    Http(Http),
    Redis(Redis),
}

/// One client's session to a peer.
pub enum PeerSession {
    Http(Box<HttpSession>),
    Redis(RedisSession),
}

impl PeerTarget {
    /// Build a peer from its URL (`${VAR}` read from the environment here). Its options
    /// come from the URL's query only, never from workload parameters.
    pub fn open(url: &str) -> Result<PeerTarget, InputError> {
        let url = expand_env(url)?;
        let parsed = TargetUrl::parse(&url)?;
        let none = Params::new();
        match parsed.scheme.as_str() {
            "http" => Ok(PeerTarget::Http(Http::from_url(&parsed, &none)?)),
            "redis" => Ok(PeerTarget::Redis(Redis::from_url(&parsed, &none)?)),
            other => Err(InputError::new(format!(
                "peer {}: expected an http:// or redis:// URL, found {other}://",
                redact(&url)
            ))),
        }
    }

    /// The family of steps it runs.
    pub fn family(&self) -> Family {
        match self {
            PeerTarget::Http(_) => Family::Http,
            PeerTarget::Redis(_) => Family::Redis,
        }
    }

    /// Open one client's session.
    pub async fn connect(&self) -> Result<PeerSession, OpError> {
        Ok(match self {
            PeerTarget::Http(t) => PeerSession::Http(Box::new(t.connect().await?)),
            PeerTarget::Redis(t) => PeerSession::Redis(t.connect().await?),
        })
    }
}

impl PeerSession {
    pub async fn execute(&mut self, op: &Op<'_>) -> Result<Outcome, OpError> {
        match self {
            PeerSession::Http(s) => s.execute(op).await,
            PeerSession::Redis(s) => s.execute(op).await,
        }
    }
}
