//! Key names: every key of one store shares the hash tag `{<prefix>}`, hence one Redis Cluster
//! slot (the module docs say why and what it costs).
//!
//! | key | type | holds |
//! |---|---|---|
//! | `{p}:s:<descriptor>:<id>` | hash | one scope's counters (descriptor: [`ScopeKind::descriptor`]) |
//! | `{p}:t:<attempt>:<request id>` | string | one reservation in flight (or its tombstone) |
//! | `{p}:leases` | sorted set | tickets scored by the end of their lease, ms |
//! | `{p}:dirty` | set | scope keys changed since the last drain |
//! | `{p}:c:<attempt>:<request id>` | string | a local fallback's usage charged (idempotency) |
//! | `{p}:fleet` | string | the fleet generation: the scopes are seeded (gone after a restart without data) |
//! | `{p}:reseed` | string | the replica seeding the fleet now (lock with a lifetime) |

use super::super::scope::{ScopeKey, ScopeKind};

/// Every scope kind, for reading a scope key back from its name.
const KINDS: [ScopeKind; 10] = [
    ScopeKind::Global,
    ScopeKind::Organization,
    ScopeKind::Team,
    ScopeKind::TeamMember,
    ScopeKind::User,
    ScopeKind::Key,
    ScopeKind::ModelPerKey,
    ScopeKind::EndUser,
    ScopeKind::Tag,
    ScopeKind::TagPerKey,
];

/// The names of one store's keys.
#[derive(Debug, Clone)]
pub(crate) struct KeySpace {
    /// `{<prefix>}:`
    head: String,
}

impl KeySpace {
    /// Keys under `prefix`. Braces in the prefix would break the hash tag and are dropped; an
    /// empty prefix is `tollgate` (an empty tag `{}` would hash each whole key to its own slot).
    pub(crate) fn new(prefix: &str) -> Self {
        let mut clean: String = prefix.chars().filter(|c| *c != '{' && *c != '}').collect();
        if clean.is_empty() {
            clean = "tollgate".to_string();
        }
        Self {
            head: format!("{{{clean}}}:"),
        }
    }

    /// The hash of a scope's counters.
    pub(crate) fn scope(&self, key: &ScopeKey) -> String {
        format!("{}s:{}:{}", self.head, key.kind.descriptor(), key.id)
    }

    /// The record of one reservation.
    pub(crate) fn ticket(&self, request_id: &str, attempt: u32) -> String {
        format!("{}t:{attempt}:{request_id}", self.head)
    }

    /// The record that a local fallback's usage was charged to the scopes.
    pub(crate) fn charge(&self, request_id: &str, attempt: u32) -> String {
        format!("{}c:{attempt}:{request_id}", self.head)
    }

    /// The fleet marker: present while the scopes hold what was seeded and counted since.
    pub(crate) fn fleet(&self) -> String {
        format!("{}fleet", self.head)
    }

    /// The lock of the replica seeding the fleet.
    pub(crate) fn reseed_lock(&self) -> String {
        format!("{}reseed", self.head)
    }

    /// The sorted set of leases.
    pub(crate) fn leases(&self) -> String {
        format!("{}leases", self.head)
    }

    /// The set of changed scopes.
    pub(crate) fn dirty(&self) -> String {
        format!("{}dirty", self.head)
    }

    /// A pattern matching every key of this store (`SCAN MATCH`; `{` is not special in it).
    #[cfg(test)]
    pub(crate) fn pattern(&self) -> String {
        format!("{}*", self.head)
    }

    /// The scope a counter hash belongs to, from its name; `None` for a name of another store
    /// or of no known kind.
    pub(crate) fn parse_scope(&self, name: &str) -> Option<ScopeKey> {
        let rest = name.strip_prefix(&self.head)?.strip_prefix("s:")?;
        let (descriptor, id) = rest.split_once(':')?;
        let kind = KINDS.into_iter().find(|k| k.descriptor() == descriptor)?;
        Some(ScopeKey::new(kind, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_share_one_hash_tag_and_read_back() {
        let ks = KeySpace::new("tollgate");
        let member = ScopeKey::team_member("t:1", "u");
        let name = ks.scope(&member);
        assert_eq!(name, "{tollgate}:s:team_member:t:1/u");
        assert_eq!(ks.parse_scope(&name), Some(member));
        assert_eq!(ks.ticket("req-1", 2), "{tollgate}:t:2:req-1");
        assert_eq!(ks.leases(), "{tollgate}:leases");
        assert_eq!(ks.dirty(), "{tollgate}:dirty");
        assert_eq!(ks.charge("req-1", 2), "{tollgate}:c:2:req-1");
        assert_eq!(ks.fleet(), "{tollgate}:fleet");
        assert_eq!(ks.reseed_lock(), "{tollgate}:reseed");
        assert_eq!(ks.scope(&ScopeKey::global()), "{tollgate}:s:global:");
        assert_eq!(
            ks.parse_scope("{tollgate}:s:global:"),
            Some(ScopeKey::global())
        );
        for kind in KINDS {
            let k = ScopeKey::new(kind, "x");
            assert_eq!(ks.parse_scope(&ks.scope(&k)), Some(k));
        }
        assert_eq!(ks.parse_scope("{other}:s:api_key:h"), None);
        assert_eq!(ks.parse_scope("{tollgate}:s:nope:h"), None);
        assert_eq!(KeySpace::new("a{b}").dirty(), "{ab}:dirty");
        assert_eq!(KeySpace::new("{}").dirty(), "{tollgate}:dirty");
    }
}
