//! What could not be observed, each thing reported once.

use super::record::{Role, Unavailable};

#[derive(Debug, Default)]
pub struct Notes {
    all: Vec<Unavailable>,
    /// Index in `all` of the first note not yet handed to an interval record.
    handed: usize,
}

impl Notes {
    /// Note that `what` on `server` is not available, `why`, and what would `enable` it; a
    /// second note of the same thing is dropped.
    pub fn add(
        &mut self,
        server: Role,
        what: &str,
        why: impl Into<String>,
        enable: impl Into<String>,
    ) {
        if self
            .all
            .iter()
            .any(|n| n.server == server && n.what == what)
        {
            return;
        }
        self.all.push(Unavailable {
            server,
            what: what.to_string(),
            why: why.into(),
            enable: enable.into(),
        });
    }

    /// The notes added since the last call.
    pub fn fresh(&mut self) -> Vec<Unavailable> {
        let fresh = self.all[self.handed..].to_vec();
        self.handed = self.all.len();
        fresh
    }

    pub fn all(&self) -> &[Unavailable] {
        &self.all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thing_once() {
        let mut n = Notes::default();
        n.add(Role::Target, "x", "a", "b");
        n.add(Role::Target, "x", "again", "");
        n.add(Role::Behind, "x", "a", "b");
        assert_eq!(n.fresh().len(), 2);
        n.add(Role::Target, "y", "c", "");
        let fresh = n.fresh();
        assert_eq!(fresh.len(), 1);
        assert_eq!(fresh[0].what, "y");
        assert!(n.fresh().is_empty());
        assert_eq!(n.all().len(), 3);
    }
}
