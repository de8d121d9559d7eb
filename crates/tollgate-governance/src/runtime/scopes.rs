//! The scopes one request is counted against, with their limits taken from the cache at that
//! moment (so a management change applies to the next request).
//!
//! For a virtual key: the key (its own limits, tightened by its budget tier: B01, B05), the
//! key's per-model limits for the model group called, the team, the team member (membership
//! tier), the user, the organization (its tier). For every caller: the end user (its tier; a
//! blocked end user is refused), each request tag with a budget tier, and the whole proxy
//! (`litellm_settings.max_budget` / `budget_duration`).

use crate::admission::{Limits, ScopeKey, ScopeKind, ScopeRequest};

use super::cache::Entities;
use super::principal::Principal;

/// Facts of one request that select scopes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestFacts<'a> {
    /// End user id (`x-litellm-end-user-id` / `x-litellm-customer-id` / body `user`).
    pub end_user: Option<&'a str>,
    /// Request tags (body `tags` / `metadata.tags`, header `x-litellm-tags`).
    pub tags: &'a [String],
    /// The model group that will be called.
    pub model_group: &'a str,
}

/// A refused end user (`/customer/block`): LiteLLM answers 400 "Blocked user".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Blocked user: end user {0} is blocked. Unblock via `/customer/unblock`.")]
pub struct BlockedEndUser(pub String);

fn tier_limits(l: Limits, tier: Option<&crate::store::BudgetTier>) -> Limits {
    match tier {
        Some(t) => l.tighter(&t.limits()),
        None => l,
    }
}

/// Builds every scope of a request. `global` is the proxy-wide limit set.
///
/// Errors: [`BlockedEndUser`].
pub fn build(
    e: &Entities,
    principal: Option<&Principal>,
    facts: RequestFacts<'_>,
    global: &Limits,
) -> Result<Vec<ScopeRequest>, BlockedEndUser> {
    let mut out = Vec::with_capacity(6);
    if let Some(p) = principal {
        let k = &p.key;
        out.push(
            ScopeRequest::new(
                ScopeKey::key(&k.token),
                tier_limits(k.limits(), p.key_tier.as_deref()),
            )
            .with_display(p.display()),
        );
        if let Some(l) = k.model_limits().remove(facts.model_group) {
            out.push(
                ScopeRequest::new(ScopeKey::model_per_key(&k.token, facts.model_group), l)
                    .with_display(p.display()),
            );
        }
        if let Some(t) = &p.team {
            out.push(
                ScopeRequest::new(
                    ScopeKey::new(ScopeKind::Team, t.team_id.as_str()),
                    t.limits(),
                )
                .with_display(t.team_alias.clone().unwrap_or_else(|| t.team_id.clone())),
            );
            if let Some(m) = &p.membership {
                let l = p
                    .member_tier
                    .as_ref()
                    .map(|b| b.limits())
                    .unwrap_or_default();
                out.push(
                    ScopeRequest::new(ScopeKey::team_member(&m.team_id, &m.user_id), l)
                        .with_display(format!("{} in Team={}", m.user_id, m.team_id)),
                );
            }
        }
        if let Some(u) = &p.user {
            out.push(ScopeRequest::new(
                ScopeKey::new(ScopeKind::User, u.user_id.as_str()),
                u.limits(),
            ));
        }
        if let Some(o) = &p.organization {
            let l = p
                .organization_tier
                .as_ref()
                .map(|b| b.limits())
                .unwrap_or_default();
            out.push(ScopeRequest::new(
                ScopeKey::new(ScopeKind::Organization, o.organization_id.as_str()),
                l,
            ));
        }
    }
    if let Some(id) = facts.end_user.filter(|s| !s.is_empty()) {
        let row = e.end_users.get(id);
        if row.is_some_and(|r| r.blocked) {
            return Err(BlockedEndUser(id.to_owned()));
        }
        let l = row
            .and_then(|r| e.budget(r.budget_id.as_deref()))
            .map(|b| b.limits())
            .unwrap_or_default();
        out.push(ScopeRequest::new(ScopeKey::new(ScopeKind::EndUser, id), l));
    }
    for tag in facts.tags {
        let l = e
            .tags
            .get(tag)
            .and_then(|t| e.budget(t.budget_id.as_deref()))
            .map(|b| b.limits())
            .unwrap_or_default();
        out.push(ScopeRequest::new(
            ScopeKey::new(ScopeKind::Tag, tag.as_str()),
            l,
        ));
    }
    out.push(ScopeRequest::new(ScopeKey::global(), global.clone()));
    Ok(out)
}

/// True when any scope has a finite budget or a TPM limit, i.e. when the prompt's token count
/// matters for admission (otherwise counting it is skipped: cheaper hot path).
pub fn needs_token_count(scopes: &[ScopeRequest]) -> bool {
    scopes
        .iter()
        .any(|s| s.limits.finite_budget().is_some() || s.limits.tpm_limit.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::cache::Entities;
    use crate::store::{BudgetTier, EndUser, Snapshot, Team, TeamMembership, VerificationToken};
    use chrono::Utc;
    use serde_json::json;

    #[test]
    fn key_scopes_carry_tier_team_member_and_model_limits() {
        let e = Entities::from_snapshot(Snapshot {
            keys: vec![VerificationToken {
                token: "h".into(),
                budget_id: Some("tier".into()),
                team_id: Some("t".into()),
                user_id: Some("u".into()),
                model_max_budget: json!({"gpt": {"max_budget": 1.5}}),
                ..Default::default()
            }],
            teams: vec![Team {
                team_id: "t".into(),
                max_budget: Some(10.0),
                ..Default::default()
            }],
            memberships: vec![TeamMembership {
                team_id: "t".into(),
                user_id: "u".into(),
                budget_id: Some("mb".into()),
                ..Default::default()
            }],
            budgets: vec![
                BudgetTier {
                    budget_id: "tier".into(),
                    max_budget: Some(30.0),
                    ..Default::default()
                },
                BudgetTier {
                    budget_id: "mb".into(),
                    max_budget: Some(2.0),
                    ..Default::default()
                },
            ],
            end_users: vec![EndUser {
                user_id: "bad".into(),
                blocked: true,
                ..Default::default()
            }],
            ..Default::default()
        });
        let p = Principal::resolve(&e, "h", Utc::now()).unwrap();
        let tags = vec!["prod".to_owned()];
        let facts = RequestFacts {
            end_user: Some("cust"),
            tags: &tags,
            model_group: "gpt",
        };
        let s = build(&e, Some(&p), facts, &Limits::default()).unwrap();
        let kinds: Vec<ScopeKind> = s.iter().map(|r| r.key.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ScopeKind::Key,
                ScopeKind::ModelPerKey,
                ScopeKind::Team,
                ScopeKind::TeamMember,
                ScopeKind::EndUser,
                ScopeKind::Tag,
                ScopeKind::Global
            ]
        );
        assert_eq!(s[0].limits.max_budget, Some(30.0)); // B01: the tier's cap applies
        assert_eq!(s[1].limits.max_budget, Some(1.5));
        assert_eq!(s[3].limits.max_budget, Some(2.0));
        assert!(needs_token_count(&s));
        let blocked = RequestFacts {
            end_user: Some("bad"),
            ..facts
        };
        assert_eq!(
            build(&e, Some(&p), blocked, &Limits::default()).unwrap_err(),
            BlockedEndUser("bad".into())
        );
        let open = build(&e, None, RequestFacts::default(), &Limits::default()).unwrap();
        assert_eq!(open.len(), 1);
        assert!(!needs_token_count(&open));
    }
}
