//! [`Principal`]: a virtual key with everything it inherits (team, user, membership, budget
//! tiers, organization), resolved from the [`super::IdentityCache`] once per request.
//!
//! Refusals follow LiteLLM (litellm-surface §4.2, §8): unknown key 401
//! `token_not_found_in_db`, blocked key (or key of a blocked team) 401 `auth_error`, expired
//! key 401 `expired_key`. Messages never carry the key.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::cache::Entities;
use crate::store::{
    BudgetTier, Organization, Team, TeamMembership, User, VerificationToken, key_extras, mask_key,
};

/// A virtual key and what it inherits.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The key row.
    pub key: Arc<VerificationToken>,
    /// The key's budget tier (`budget_id`).
    pub key_tier: Option<Arc<BudgetTier>>,
    /// Owning team.
    pub team: Option<Arc<Team>>,
    /// Owning internal user.
    pub user: Option<Arc<User>>,
    /// The user's membership of the team (per-member budget via its `budget_id`).
    pub membership: Option<Arc<TeamMembership>>,
    /// The membership's budget tier.
    pub member_tier: Option<Arc<BudgetTier>>,
    /// Owning organization (the key's, else the team's).
    pub organization: Option<Arc<Organization>>,
    /// The organization's budget tier.
    pub organization_tier: Option<Arc<BudgetTier>>,
}

/// Why a presented virtual key is refused. Every variant is HTTP 401.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeyError {
    /// No key with this hash (the hex SHA-256 of the presented key, never the key itself).
    /// LiteLLM's words (`get_key_object` in `litellm/proxy/auth/auth_checks.py`), which name
    /// the hash so an operator can look the row up.
    #[error(
        "Authentication Error, Invalid proxy server token passed. key={0}, not found in db. Create key via `/key/generate` call."
    )]
    NotFound(String),
    /// The key is not `sk-…` (LiteLLM refuses these so a stored hash cannot be replayed).
    #[error("LiteLLM Virtual Key expected. Received={0}, expected to start with 'sk-'.")]
    NotVirtualKey(String),
    /// `blocked: true` on the key.
    #[error("Authentication Error, Key is blocked. Update via `/key/unblock` if you're an admin.")]
    Blocked,
    /// The key's team is blocked.
    #[error(
        "Authentication Error, Team={0} is blocked. Update via `/team/unblock` if you're an admin."
    )]
    TeamBlocked(String),
    /// `expires` has passed.
    #[error("Authentication Error - Expired Key. Key Expiry time {expires} and current time {now}")]
    Expired {
        /// When the key expired.
        expires: DateTime<Utc>,
        /// Now.
        now: DateTime<Utc>,
    },
}

impl KeyError {
    /// LiteLLM's error `type` for this refusal.
    pub fn error_type(&self) -> &'static str {
        match self {
            KeyError::NotFound(_) => "token_not_found_in_db",
            KeyError::Expired { .. } => "expired_key",
            _ => "auth_error",
        }
    }

    /// The refusal for a presented value that is not a virtual key, showing only its ends.
    pub fn not_virtual(presented: &str) -> Self {
        let masked = if presented.chars().count() > 8 {
            let head: String = presented.chars().take(4).collect();
            let tail: String = presented
                .chars()
                .rev()
                .take(4)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("{head}****{tail}")
        } else {
            "****".to_owned()
        };
        KeyError::NotVirtualKey(masked)
    }
}

/// The key as the request sees it at `now`: with a temporary budget increase in force
/// ([`key_extras::effective_max_budget`]), a copy whose `max_budget` includes it, so every
/// check and report of the request (the refusal's "Max budget", `x-litellm-key-max-budget`)
/// uses it, as LiteLLM's `_update_key_budget_with_temp_budget_increase`
/// (`litellm/proxy/auth/user_api_key_auth.py`) does; else the cached row itself. Keys without
/// a `max_budget` or with empty `metadata` cost one check.
fn with_temp_budget(key: &Arc<VerificationToken>, now: DateTime<Utc>) -> Arc<VerificationToken> {
    if key.max_budget.is_none() || key.metadata.as_object().is_none_or(|m| m.is_empty()) {
        return Arc::clone(key);
    }
    match key_extras::effective_max_budget(key.max_budget, &key.metadata, now) {
        Some(b) if Some(b) != key.max_budget => Arc::new(VerificationToken {
            max_budget: Some(b),
            ..VerificationToken::clone(key)
        }),
        _ => Arc::clone(key),
    }
}

impl Principal {
    /// Resolves the key with hash `hash` at `now` (its `max_budget` raised by a temporary
    /// increase in force, see [`with_temp_budget`]).
    ///
    /// Errors: [`KeyError::NotFound`], [`KeyError::Blocked`], [`KeyError::TeamBlocked`],
    /// [`KeyError::Expired`].
    pub fn resolve(e: &Entities, hash: &str, now: DateTime<Utc>) -> Result<Self, KeyError> {
        let key = e
            .keys
            .get(hash)
            .ok_or_else(|| KeyError::NotFound(hash.to_owned()))?;
        if key.blocked == Some(true) {
            return Err(KeyError::Blocked);
        }
        if let Some(expires) = key.expires
            && expires <= now
        {
            return Err(KeyError::Expired { expires, now });
        }
        let team = key.team_id.as_deref().and_then(|t| e.teams.get(t)).cloned();
        if let Some(t) = &team
            && t.blocked
        {
            return Err(KeyError::TeamBlocked(t.team_id.clone()));
        }
        let user = key.user_id.as_deref().and_then(|u| e.users.get(u)).cloned();
        let membership = match (&key.team_id, &key.user_id) {
            (Some(t), Some(u)) => e.memberships.get(&(t.clone(), u.clone())).cloned(),
            _ => None,
        };
        let member_tier = membership
            .as_ref()
            .and_then(|m| e.budget(m.budget_id.as_deref()))
            .cloned();
        let organization = key
            .organization_id
            .as_deref()
            .or(team.as_ref().and_then(|t| t.organization_id.as_deref()))
            .and_then(|o| e.organizations.get(o))
            .cloned();
        let organization_tier = organization
            .as_ref()
            .and_then(|o| e.budget(o.budget_id.as_deref()))
            .cloned();
        Ok(Principal {
            key_tier: e.budget(key.budget_id.as_deref()).cloned(),
            key: with_temp_budget(key, now),
            team,
            user,
            membership,
            member_tier,
            organization,
            organization_tier,
        })
    }

    /// How the key is named in refusals: `"<alias> (sk-...abcd)"`, or the masked key alone.
    pub fn display(&self) -> String {
        let masked = self
            .key
            .key_name
            .clone()
            .unwrap_or_else(|| mask_key(&self.key.token));
        match &self.key.key_alias {
            Some(a) if !a.is_empty() => format!("{a} ({masked})"),
            _ => masked,
        }
    }

    /// The model group an alias of the key (`aliases`), else of its team
    /// (`metadata.model_aliases`), maps `requested` to.
    pub fn alias(&self, requested: &str) -> Option<String> {
        let lookup = |v: &serde_json::Value| {
            v.get(requested)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        lookup(&self.key.aliases).or_else(|| {
            self.team
                .as_ref()
                .and_then(|t| t.metadata.get("model_aliases"))
                .and_then(lookup)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Snapshot;
    use serde_json::json;

    fn entities() -> Entities {
        Entities::from_snapshot(Snapshot {
            keys: vec![
                VerificationToken {
                    token: "k1".into(),
                    key_alias: Some("ci".into()),
                    key_name: Some("sk-...abcd".into()),
                    team_id: Some("t1".into()),
                    user_id: Some("u1".into()),
                    aliases: json!({"fast": "small"}),
                    ..Default::default()
                },
                VerificationToken {
                    token: "blocked".into(),
                    blocked: Some(true),
                    ..Default::default()
                },
                VerificationToken {
                    token: "old".into(),
                    expires: Some(DateTime::from_timestamp(1, 0).unwrap()),
                    ..Default::default()
                },
                VerificationToken {
                    token: "tb".into(),
                    team_id: Some("t2".into()),
                    ..Default::default()
                },
            ],
            teams: vec![
                Team {
                    team_id: "t1".into(),
                    metadata: json!({"model_aliases": {"team-fast": "cheap"}}),
                    ..Default::default()
                },
                Team {
                    team_id: "t2".into(),
                    blocked: true,
                    ..Default::default()
                },
            ],
            memberships: vec![TeamMembership {
                team_id: "t1".into(),
                user_id: "u1".into(),
                budget_id: Some("b".into()),
                ..Default::default()
            }],
            budgets: vec![BudgetTier {
                budget_id: "b".into(),
                max_budget: Some(3.0),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    #[test]
    fn resolves_inherited_entities_and_aliases() {
        let p = Principal::resolve(&entities(), "k1", Utc::now()).unwrap();
        assert_eq!(p.team.as_ref().unwrap().team_id, "t1");
        assert_eq!(p.member_tier.as_ref().unwrap().max_budget, Some(3.0));
        assert_eq!(p.display(), "ci (sk-...abcd)");
        assert_eq!(p.alias("fast").as_deref(), Some("small"));
        assert_eq!(p.alias("team-fast").as_deref(), Some("cheap"));
        assert_eq!(p.alias("other"), None);
    }

    #[test]
    fn a_temporary_increase_raises_max_budget_until_its_expiry_without_touching_the_cache() {
        let e = Entities::from_snapshot(Snapshot {
            keys: vec![VerificationToken {
                token: "t".into(),
                max_budget: Some(2.0),
                metadata: json!({"temp_budget_increase": 5.0, "temp_budget_expiry": "2030-01-01T00:00:00"}),
                ..Default::default()
            }],
            ..Default::default()
        });
        let before = DateTime::from_timestamp(1_893_455_999, 0).unwrap(); // 2029-12-31T23:59:59Z
        let p = Principal::resolve(&e, "t", before).unwrap();
        assert_eq!(p.key.max_budget, Some(7.0));
        assert_eq!(p.key.limits().max_budget, Some(7.0));
        assert_eq!(e.keys["t"].max_budget, Some(2.0));
        let at = DateTime::from_timestamp(1_893_456_000, 0).unwrap(); // the expiry itself
        let p = Principal::resolve(&e, "t", at).unwrap();
        assert_eq!(p.key.max_budget, Some(2.0));
        assert!(Arc::ptr_eq(&p.key, &e.keys["t"]));
    }

    #[test]
    fn refusals() {
        let e = entities();
        let now = Utc::now();
        assert_eq!(
            Principal::resolve(&e, "nope", now).unwrap_err(),
            KeyError::NotFound("nope".into())
        );
        assert_eq!(
            KeyError::NotFound("ab12".into()).to_string(),
            "Authentication Error, Invalid proxy server token passed. key=ab12, not found in db. \
             Create key via `/key/generate` call."
        );
        assert_eq!(
            Principal::resolve(&e, "blocked", now).unwrap_err(),
            KeyError::Blocked
        );
        let exp = Principal::resolve(&e, "old", now).unwrap_err();
        assert_eq!(exp.error_type(), "expired_key");
        assert!(matches!(
            Principal::resolve(&e, "tb", now).unwrap_err(),
            KeyError::TeamBlocked(t) if t == "t2"
        ));
        assert_eq!(
            KeyError::not_virtual("abcdefghijkl").to_string(),
            "LiteLLM Virtual Key expected. Received=abcd****ijkl, expected to start with 'sk-'."
        );
    }
}
