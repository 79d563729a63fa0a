//! Where the time went: the bottleneck verdict beside the validity verdict, as the result
//! file records it (`bottleneck`). The checks that judge are `analysis::bottleneck`, one
//! per resource; docs/observe.md says how each is read.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The verdict: the resource the operations' time went to, or none standing out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Bottleneck {
    /// A resource's name (`server_cpu`, `locks`, `io`, `connections`, `network`,
    /// `server_other`, `rig`), `none` when no single one stands out, or `unknown` when too
    /// little was seen to judge.
    pub verdict: String,
    /// The verdict in words, with the figures that support it.
    pub line: String,
    /// Every resource judged, in a fixed order.
    pub resources: Vec<Resource>,
}

/// One resource, judged by the USE method over what the rig can see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Resource {
    pub resource: String,
    pub status: Status,
    /// The share of the operations' time that went to this resource, where it can be
    /// told (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<f64>,
    /// What was seen, in words.
    pub summary: String,
    /// The figures behind it, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The verdict names it.
    Bottleneck,
    /// A large share of the time or of its capacity, but not the verdict.
    Busy,
    /// Seen, and not where the time went.
    Fine,
    /// Not seen (the target does not say, or the observation was unavailable).
    Unknown,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Bottleneck => "bottleneck",
            Status::Busy => "busy",
            Status::Fine => "fine",
            Status::Unknown => "unknown",
        }
    }
}

impl Bottleneck {
    /// The resource the verdict names, if one.
    pub fn named(&self) -> Option<&Resource> {
        self.resources.iter().find(|r| r.resource == self.verdict)
    }
}
