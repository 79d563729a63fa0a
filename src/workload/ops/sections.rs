//! The `[[op]]` table and a `tx`'s step table as written; each native family's own syntax
//! lives in its file (`sql.rs`, `ldap.rs`, ...).

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::grpc::GrpcArgs;
use super::http::HttpArgs;
use super::kv::KvSection;
use super::ldap::LdapSection;
use super::memcached::MemcachedSection;
use super::record::RecordSection;
use super::sql::SqlForm;

/// One `[[op]]` table: its name and weight, the one operation it names (kv, native, `tx`,
/// `steps`, `connect`, `authenticate` or `nop`), and what goes around it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::workload) struct OpSection {
    pub name: Spanned<String>,
    /// A number, or `"{param}"` naming a number parameter (YCSB's proportions); 0 leaves
    /// the op out.
    pub weight: Option<Spanned<toml::Value>>,
    pub(super) kv: Option<KvSection>,
    pub(super) record: Option<RecordSection>,
    pub(super) nop: Option<toml::value::Table>,
    pub(super) connect: Option<toml::value::Table>,
    pub(super) authenticate: Option<toml::value::Table>,
    pub(super) sql: Option<Spanned<SqlForm>>,
    pub(super) redis: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) ldap: Option<LdapSection>,
    pub(super) http: Option<Spanned<HttpArgs>>,
    pub(super) grpc: Option<Spanned<GrpcArgs>>,
    pub(super) memcached: Option<MemcachedSection>,
    pub(super) tx: Option<Spanned<Vec<Spanned<StepSection>>>>,
    /// `tx`'s steps without the transaction: each statement in autocommit.
    pub(super) steps: Option<Spanned<Vec<Spanned<StepSection>>>>,
    pub(super) capture: Option<Spanned<Vec<String>>>,
    pub(super) retry: Option<Spanned<RetrySection>>,
    /// Values drawn once per attempt of the operation, which all its templates share.
    #[serde(rename = "let")]
    pub(super) lets: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// The op exists only for these switch values.
    pub only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
    /// A native op runs on this peer instead of the target.
    pub(super) on: Option<Spanned<String>>,
    /// `pause = { keying = "18s", think = "12s", only = { ... } }`: TPC-C's keying time
    /// before the operation and think time after it (closed loop).
    pub(super) pause: Option<Spanned<PauseSection>>,
}

/// One table of `tx = [...]` or `steps = [...]`: a native step, a commit point, a rollback
/// step or a `repeat` group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StepSection {
    pub(super) sql: Option<Spanned<SqlForm>>,
    pub(super) record: Option<RecordSection>,
    pub(super) redis: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) ldap: Option<LdapSection>,
    pub(super) http: Option<Spanned<HttpArgs>>,
    pub(super) grpc: Option<Spanned<GrpcArgs>>,
    pub(super) memcached: Option<MemcachedSection>,
    pub(super) capture: Option<Spanned<Vec<String>>>,
    pub(super) only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
    /// `when = "NAME"`, or `when = ["NAME", "!OTHER", ...]`: every one must hold.
    pub(super) when: Option<Spanned<WhenForm>>,
    pub(super) on: Option<Spanned<String>>,
    /// `{ commit = {} }`: a commit point, not a native step.
    pub(super) commit: Option<toml::value::Table>,
    /// `{ rollback = {}, when = "..." }`: roll back and end the operation, not a native step.
    pub(super) rollback: Option<toml::value::Table>,
    /// `{ repeat = "COUNT", steps = [...] }`: run `steps` COUNT times, drawn each time.
    pub(super) repeat: Option<Spanned<String>>,
    pub(super) steps: Option<Spanned<Vec<Spanned<StepSection>>>>,
}

/// The native operations one table (an op or a tx step) names, a field per family.
pub(super) struct Natives<'a> {
    pub sql: Option<&'a Spanned<SqlForm>>,
    pub redis: Option<&'a Spanned<Vec<Spanned<String>>>>,
    pub ldap: Option<&'a LdapSection>,
    pub http: Option<&'a Spanned<HttpArgs>>,
    pub record: Option<&'a RecordSection>,
    pub grpc: Option<&'a Spanned<GrpcArgs>>,
    pub memcached: Option<&'a MemcachedSection>,
}

impl Natives<'_> {
    /// The table names no native operation.
    pub fn is_empty(&self) -> bool {
        self.sql.is_none()
            && self.redis.is_none()
            && self.ldap.is_none()
            && self.http.is_none()
            && self.record.is_none()
            && self.grpc.is_none()
            && self.memcached.is_none()
    }
}

impl OpSection {
    pub(super) fn natives(&self) -> Natives<'_> {
        Natives {
            sql: self.sql.as_ref(),
            redis: self.redis.as_ref(),
            ldap: self.ldap.as_ref(),
            http: self.http.as_ref(),
            record: self.record.as_ref(),
            grpc: self.grpc.as_ref(),
            memcached: self.memcached.as_ref(),
        }
    }
}

impl StepSection {
    pub(super) fn natives(&self) -> Natives<'_> {
        Natives {
            sql: self.sql.as_ref(),
            redis: self.redis.as_ref(),
            ldap: self.ldap.as_ref(),
            http: self.http.as_ref(),
            record: self.record.as_ref(),
            grpc: self.grpc.as_ref(),
            memcached: self.memcached.as_ref(),
        }
    }
}

/// `pause = { keying = "D", think = "D", only = { ... } }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PauseSection {
    pub(super) keying: Option<Spanned<String>>,
    pub(super) think: Option<Spanned<String>>,
    pub(super) only: Option<Spanned<BTreeMap<String, OneOrMany>>>,
}

/// One string or a list of them: a switch's values in `only = { NAME = ... }`, an LDAP
/// attribute's values.
#[derive(Debug)]
pub(in crate::workload) struct OneOrMany(pub(super) Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let one = |s| OneOrMany(vec![s]);
        crate::workload::string_or_list(d, "a string, or a list of strings", one, OneOrMany)
    }
}

/// `when = "NAME"` or a list of them, all of which must hold (pgbench's `\elif`: the
/// branches before are false and this one true).
#[derive(Debug)]
pub(super) enum WhenForm {
    One(String),
    All(Vec<String>),
}

impl<'de> Deserialize<'de> for WhenForm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expecting = "a value's name, \"NAME\" or \"!NAME\", or a list of them: [\"!a\", \"b\"]";
        crate::workload::string_or_list(d, expecting, WhenForm::One, WhenForm::All)
    }
}

impl WhenForm {
    pub(super) fn names(&self) -> Vec<&str> {
        match self {
            WhenForm::One(n) => vec![n.as_str()],
            WhenForm::All(ns) => ns.iter().map(String::as_str).collect(),
        }
    }
}

/// `retry = { on = ["deadlock", ...], max = N, backoff = "D" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetrySection {
    pub(super) on: Vec<Spanned<String>>,
    pub(super) max: Option<u32>,
    pub(super) backoff: Option<Spanned<String>>,
}
