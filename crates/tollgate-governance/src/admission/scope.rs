//! Scopes (the entities a request is counted against) and their limits.

use std::fmt;
use std::sync::Arc;

use crate::duration::BudgetDuration;

/// The kind of entity a counter belongs to. Each maps to LiteLLM's rate-limit descriptor key
/// ([`ScopeKind::descriptor`]) and budget-message label ([`ScopeKind::label`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeKind {
    /// The whole proxy (`litellm.max_budget`).
    Global,
    /// An organization.
    Organization,
    /// A team.
    Team,
    /// A user inside a team (`LiteLLM_TeamMembership`): per-member budget and limits.
    TeamMember,
    /// An internal user.
    User,
    /// A virtual key (id: hex SHA-256 of the key).
    Key,
    /// One model group on one key (`model_max_budget`, `model_rpm_limit`, `model_tpm_limit`);
    /// id: `<key hash>/<model group>`.
    ModelPerKey,
    /// An end user / customer (request `user` field or `x-litellm-end-user-id`).
    EndUser,
    /// A request tag.
    Tag,
    /// One request tag on one key (`metadata.tag_rpm_limit`, LiteLLM v3 limiter's
    /// `tag_per_key` descriptor); id: `<key hash>:<tag>`.
    TagPerKey,
}

impl ScopeKind {
    /// LiteLLM v3 limiter descriptor key, used in `x-ratelimit-{descriptor}-remaining-requests`
    /// and in the 429 message (litellm-surface §5.4).
    pub fn descriptor(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Organization => "organization",
            Self::Team => "team",
            Self::TeamMember => "team_member",
            Self::User => "user",
            Self::Key => "api_key",
            Self::ModelPerKey => "model_per_key",
            Self::EndUser => "end_user",
            Self::Tag => "tag",
            Self::TagPerKey => "tag_per_key",
        }
    }

    /// Label in "Budget has been exceeded! {label}={display} ..." (litellm-surface §5.2).
    pub fn label(self) -> &'static str {
        match self {
            Self::Global => "Proxy",
            Self::Organization => "Organization",
            Self::Team => "Team",
            Self::TeamMember => "User",
            Self::User => "User",
            Self::Key => "Key",
            Self::ModelPerKey => "Key",
            Self::EndUser => "End User",
            Self::Tag => "Tag",
            Self::TagPerKey => "Key",
        }
    }
}

/// Identifies one counter: kind + id. Ids are never raw keys (a key scope's id is its hash).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeKey {
    /// The entity kind.
    pub kind: ScopeKind,
    /// The entity id (key hash, team id, `team_id/user_id`, `key_hash/model_group`, ...).
    pub id: Arc<str>,
}

impl ScopeKey {
    /// A scope key.
    pub fn new(kind: ScopeKind, id: impl Into<Arc<str>>) -> Self {
        Self {
            kind,
            id: id.into(),
        }
    }

    /// The proxy-wide scope.
    pub fn global() -> Self {
        Self::new(ScopeKind::Global, "")
    }

    /// A key scope from the key's hex SHA-256.
    pub fn key(hash: &str) -> Self {
        Self::new(ScopeKind::Key, hash)
    }

    /// A team member scope: id `team_id/user_id`.
    pub fn team_member(team_id: &str, user_id: &str) -> Self {
        Self::new(ScopeKind::TeamMember, format!("{team_id}/{user_id}"))
    }

    /// A per-model-per-key scope: id `key_hash/model_group`.
    pub fn model_per_key(key_hash: &str, model_group: &str) -> Self {
        Self::new(ScopeKind::ModelPerKey, format!("{key_hash}/{model_group}"))
    }

    /// A per-tag-per-key scope: id `key_hash:tag`, the value LiteLLM's v3 limiter names in
    /// its `tag_per_key` refusals (`parallel_request_limiter_v3.py`).
    pub fn tag_per_key(key_hash: &str, tag: &str) -> Self {
        Self::new(ScopeKind::TagPerKey, format!("{key_hash}:{tag}"))
    }
}

impl fmt::Debug for ScopeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.descriptor(), self.id)
    }
}

/// Limits of one scope for one request. Every field is optional; `None` = no limit.
/// Built by the caller from the identity cache (a key's own fields merged with its budget tier,
/// see [`Limits::tighter`]), so a management change is in force on the next request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// USD. Refuse when `spend + reserved >= max_budget` (non-finite values are ignored).
    pub max_budget: Option<f64>,
    /// Budget window; spend returns to 0 at each standardised reset (see [`crate::duration`]).
    pub budget_duration: Option<BudgetDuration>,
    /// Tokens (input + output) per 60 s window.
    pub tpm_limit: Option<u64>,
    /// Requests per 60 s window.
    pub rpm_limit: Option<u64>,
    /// Requests in flight at once.
    pub max_parallel_requests: Option<u64>,
}

fn min_opt<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

impl Limits {
    /// The tighter of two limit sets, field by field (a key's effective cap is the tighter
    /// of its own `max_budget` and its budget tier's). The budget window is `self`'s when set,
    /// else `other`'s (a key without its own `budget_duration` inherits its tier's schedule).
    pub fn tighter(&self, other: &Limits) -> Limits {
        Limits {
            max_budget: min_opt(self.finite_budget(), other.finite_budget()),
            budget_duration: self.budget_duration.or(other.budget_duration),
            tpm_limit: min_opt(self.tpm_limit, other.tpm_limit),
            rpm_limit: min_opt(self.rpm_limit, other.rpm_limit),
            max_parallel_requests: min_opt(self.max_parallel_requests, other.max_parallel_requests),
        }
    }

    /// `max_budget` if finite (LiteLLM ignores non-finite budgets).
    pub fn finite_budget(&self) -> Option<f64> {
        self.max_budget.filter(|b| b.is_finite())
    }

    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tighter_takes_the_minimum_and_inherits_the_window() {
        let key = Limits {
            max_budget: None,
            rpm_limit: Some(10),
            ..Limits::default()
        };
        let tier = Limits {
            max_budget: Some(30.0),
            budget_duration: Some(BudgetDuration::Days(1)),
            rpm_limit: Some(5),
            tpm_limit: Some(1000),
            ..Limits::default()
        };
        let eff = key.tighter(&tier);
        assert_eq!(eff.max_budget, Some(30.0));
        assert_eq!(eff.budget_duration, Some(BudgetDuration::Days(1)));
        assert_eq!(eff.rpm_limit, Some(5));
        assert_eq!(eff.tpm_limit, Some(1000));
        assert_eq!(eff.max_parallel_requests, None);
        let own = Limits {
            max_budget: Some(10.0),
            budget_duration: Some(BudgetDuration::Hours(1)),
            ..Limits::default()
        };
        let eff = own.tighter(&tier);
        assert_eq!(eff.max_budget, Some(10.0));
        assert_eq!(eff.budget_duration, Some(BudgetDuration::Hours(1)));
        let inf = Limits {
            max_budget: Some(f64::INFINITY),
            ..Limits::default()
        };
        assert_eq!(inf.tighter(&Limits::default()).max_budget, None);
    }

    #[test]
    fn scope_keys_order_and_print_without_secrets() {
        let k = ScopeKey::key("abc123");
        assert_eq!(format!("{k:?}"), "api_key:abc123");
        assert_eq!(ScopeKey::team_member("t", "u").id.as_ref(), "t/u");
        assert_eq!(
            ScopeKey::model_per_key("h", "gpt-4o").id.as_ref(),
            "h/gpt-4o"
        );
        let t = ScopeKey::tag_per_key("h", "cell-1");
        assert_eq!(format!("{t:?}"), "tag_per_key:h:cell-1");
        assert!(ScopeKey::global() < ScopeKey::new(ScopeKind::Team, "a"));
    }
}
