//! The scopes one request is counted against, with their limits taken from the cache at that
//! moment (so a management change applies to the next request).
//!
//! For a virtual key: the key (its own limits, tightened by its budget tier: the tighter cap, and the tier's window when the key has none), the
//! key's per-model limits for the model group called, the team, the team member (membership
//! tier), the user, the organization (its tier). For every caller: the end user (its tier, else
//! the default end-user budget, [`EndUserDefault`]; a blocked end user is refused), each request
//! tag with a budget tier, and the whole proxy (`litellm_settings.max_budget` /
//! `budget_duration`).
//!
//! An end user seen for the first time has no row yet: its scope is created by the admission
//! reservation itself, atomically with the check, so a burst of first requests is counted
//! against one budget from the first request on (its `"LiteLLM_EndUserTable"` row is written
//! behind, with its spend).

use crate::admission::{Limits, ScopeKey, ScopeKind, ScopeRequest};
use crate::store::{EndUser, ModelNames, key_extras};

use super::cache::Entities;
use super::principal::Principal;

/// LiteLLM's default budget for end users without their own (`litellm_settings`):
///
/// - `max_end_user_budget_id`: a budget tier (`"LiteLLM_BudgetTable"`, created with
///   `/budget/new`) whose limits (`max_budget`, `budget_duration`, `tpm_limit`, `rpm_limit`,
///   `max_parallel_requests`) apply to each such end user, each on its own spend;
/// - `max_end_user_budget`: a cap in USD for each such end user; with a tier too, the tighter
///   of the two caps applies.
///
/// An end user whose `budget_id` names a tier (`/customer/new`, `/customer/update`) follows
/// that tier only. A `max_end_user_budget_id` naming no tier (not created yet, or deleted)
/// leaves `max_end_user_budget` alone in force. Looked up on every request, so a tier created
/// or changed later is in force on the next request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndUserDefault {
    /// `max_end_user_budget`, USD.
    pub max_budget: Option<f64>,
    /// `max_end_user_budget_id`.
    pub budget_id: Option<String>,
}

impl EndUserDefault {
    /// True when neither setting is given.
    pub fn is_empty(&self) -> bool {
        self.max_budget.is_none() && self.budget_id.is_none()
    }
}

/// The limits of an end user (its row, if any): its own tier's, else the default's
/// (see [`EndUserDefault`]).
pub fn end_user_limits(e: &Entities, row: Option<&EndUser>, default: &EndUserDefault) -> Limits {
    if let Some(t) = row.and_then(|r| e.budget(r.budget_id.as_deref())) {
        return t.limits();
    }
    if default.is_empty() {
        return Limits::default();
    }
    let cap = Limits {
        max_budget: default.max_budget,
        ..Limits::default()
    };
    match e.budget(default.budget_id.as_deref()) {
        Some(t) => t.limits().tighter(&cap),
        None => cap,
    }
}

/// Facts of one request that select scopes.
#[derive(Debug, Clone, Copy, Default)]
pub struct RequestFacts<'a> {
    /// End user id (`x-litellm-end-user-id` / `x-litellm-customer-id` / body `user`).
    pub end_user: Option<&'a str>,
    /// Request tags (body `tags` / `metadata.tags`, header `x-litellm-tags`).
    pub tags: &'a [String],
    /// The model group that will be called.
    pub model_group: &'a str,
    /// The model name as the client sent it, on the first attempt (`None` on a fallback):
    /// per-model budgets keyed by it govern first ([`crate::store::ModelNames`]).
    pub requested: Option<&'a str>,
    /// The model group a key or team alias maps the requested name to, on the first attempt.
    pub routed: Option<&'a str>,
}

impl<'a> RequestFacts<'a> {
    /// The names per-model budgets of this attempt may be keyed by.
    pub fn model_names(&self) -> ModelNames<'a> {
        ModelNames {
            requested: self.requested,
            routed: self.routed,
            group: self.model_group,
        }
    }
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

/// Builds every scope of a request. `global` is the proxy-wide limit set (its scope is left
/// out when it sets nothing), `end_user` the default end-user budget.
///
/// Errors: [`BlockedEndUser`].
pub fn build(
    e: &Entities,
    principal: Option<&Principal>,
    facts: RequestFacts<'_>,
    global: &Limits,
    end_user: &EndUserDefault,
) -> Result<Vec<ScopeRequest>, BlockedEndUser> {
    build_noting(e, principal, facts, global, end_user, &mut false)
}

/// [`build`], also setting `unseen` when the request's end user has no row in `e` yet (its
/// first request: the caller records it, so the management API sees it at once).
pub(super) fn build_noting(
    e: &Entities,
    principal: Option<&Principal>,
    facts: RequestFacts<'_>,
    global: &Limits,
    end_user: &EndUserDefault,
    unseen: &mut bool,
) -> Result<Vec<ScopeRequest>, BlockedEndUser> {
    let mut out = Vec::with_capacity(6);
    if let Some(p) = principal {
        push_key_scopes(&mut out, p, &facts);
        push_team_scopes(&mut out, p);
        push_owner_scopes(&mut out, p);
    }
    if let Some(id) = facts.end_user.filter(|s| !s.is_empty()) {
        out.push(end_user_scope(e, id, end_user, unseen)?);
    }
    push_tag_scopes(&mut out, e, facts.tags);
    // The proxy-wide scope only counts when `litellm_settings` limits the proxy: without a
    // limit nothing reads it on the request path, and `/global/spend` sums the spend logs.
    if !global.is_empty() {
        out.push(ScopeRequest::new(ScopeKey::global(), global.clone()));
    }
    Ok(out)
}

/// The virtual key's scope (its limits tightened by its budget tier), its per-model budget
/// scopes for the model names of this attempt, and one `tag_per_key` scope per request tag
/// its `metadata.tag_rpm_limit` limits ([`key_extras::tag_scopes`]).
fn push_key_scopes(out: &mut Vec<ScopeRequest>, p: &Principal, facts: &RequestFacts<'_>) {
    let k = &p.key;
    out.push(
        ScopeRequest::new(
            ScopeKey::key(&k.token),
            tier_limits(k.limits(), p.key_tier.as_deref()),
        )
        .with_display(p.display()),
    );
    for m in k.model_scopes(&facts.model_names()).into_iter().flatten() {
        // LiteLLM names the key by its alias here ("key_alias: None" without one)
        let alias = k.key_alias.as_deref().filter(|a| !a.is_empty());
        out.push(
            ScopeRequest::new(ScopeKey::model_per_key(&k.token, m.name), m.limits)
                .with_display(alias.unwrap_or("None")),
        );
    }
    out.extend(key_extras::tag_scopes(&k.token, &k.metadata, facts.tags));
}

/// The key's team scope and, with a membership, the team member scope (membership tier).
///
/// The team scope is named by its `team_id`, never its alias, as LiteLLM's refusals name it
/// (`Budget has been exceeded! Team=<team_id> ...`, `litellm/proxy/auth/auth_checks.py`).
fn push_team_scopes(out: &mut Vec<ScopeRequest>, p: &Principal) {
    let Some(t) = &p.team else { return };
    out.push(ScopeRequest::new(
        ScopeKey::new(ScopeKind::Team, t.team_id.as_str()),
        t.limits(),
    ));
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

/// The key's internal user scope and its organization scope (the organization's tier).
fn push_owner_scopes(out: &mut Vec<ScopeRequest>, p: &Principal) {
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

/// The end user `id`'s scope; sets `unseen` when it has no row yet.
///
/// Errors: [`BlockedEndUser`] when its row is blocked.
fn end_user_scope(
    e: &Entities,
    id: &str,
    default: &EndUserDefault,
    unseen: &mut bool,
) -> Result<ScopeRequest, BlockedEndUser> {
    let row = e.end_users.get(id);
    *unseen = row.is_none();
    if row.is_some_and(|r| r.blocked) {
        return Err(BlockedEndUser(id.to_owned()));
    }
    let l = end_user_limits(e, row.map(|r| r.as_ref()), default);
    Ok(ScopeRequest::new(ScopeKey::new(ScopeKind::EndUser, id), l))
}

/// One scope per request tag, limited by the tag's budget tier (no limits without one).
fn push_tag_scopes(out: &mut Vec<ScopeRequest>, e: &Entities, tags: &[String]) {
    for tag in tags {
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
    use crate::duration::BudgetDuration;
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
                model_max_budget: json!({"gpt": {"budget_limit": 1.5, "time_period": "1d"}}),
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
            ..RequestFacts::default()
        };
        let s = build(
            &e,
            Some(&p),
            facts,
            &Limits::default(),
            &EndUserDefault::default(),
        )
        .unwrap();
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
            ]
        );
        // a proxy-wide limit adds the proxy scope, last
        let proxy = Limits {
            max_budget: Some(100.0),
            ..Limits::default()
        };
        let with_proxy = build(&e, Some(&p), facts, &proxy, &EndUserDefault::default()).unwrap();
        assert_eq!(with_proxy.len(), 7);
        assert_eq!(with_proxy[6].key, ScopeKey::global());
        assert_eq!(with_proxy[6].limits.max_budget, Some(100.0));
        assert_eq!(s[0].limits.max_budget, Some(30.0)); // the tier's cap applies
        assert_eq!(s[1].limits.max_budget, Some(1.5));
        assert_eq!(s[3].limits.max_budget, Some(2.0));
        assert!(needs_token_count(&s));
        let blocked = RequestFacts {
            end_user: Some("bad"),
            ..facts
        };
        assert_eq!(
            build(
                &e,
                Some(&p),
                blocked,
                &Limits::default(),
                &EndUserDefault::default()
            )
            .unwrap_err(),
            BlockedEndUser("bad".into())
        );
        let open = build(
            &e,
            None,
            RequestFacts::default(),
            &Limits::default(),
            &EndUserDefault::default(),
        )
        .unwrap();
        assert!(open.is_empty(), "{open:?}");
        assert!(!needs_token_count(&open));
    }

    #[test]
    fn end_users_without_their_own_tier_take_the_default() {
        let e = Entities::from_snapshot(Snapshot {
            budgets: vec![
                BudgetTier {
                    budget_id: "eu-default".into(),
                    max_budget: Some(5.0),
                    rpm_limit: Some(3),
                    budget_duration: Some("1d".into()),
                    ..Default::default()
                },
                BudgetTier {
                    budget_id: "vip".into(),
                    max_budget: Some(50.0),
                    ..Default::default()
                },
            ],
            end_users: vec![
                EndUser {
                    user_id: "vip-user".into(),
                    budget_id: Some("vip".into()),
                    ..Default::default()
                },
                EndUser {
                    user_id: "plain".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        let both = EndUserDefault {
            max_budget: Some(2.0),
            budget_id: Some("eu-default".into()),
        };
        let row = |id: &str| e.end_users.get(id).map(|r| r.as_ref());
        // never seen, or seen without a tier: the default tier, capped by max_end_user_budget
        for who in [None, row("plain")] {
            let l = end_user_limits(&e, who, &both);
            assert_eq!(l.max_budget, Some(2.0));
            assert_eq!(l.rpm_limit, Some(3));
            assert_eq!(l.budget_duration, Some(BudgetDuration::Days(1)));
        }
        // an own tier wins entirely
        assert_eq!(
            end_user_limits(&e, row("vip-user"), &both).max_budget,
            Some(50.0)
        );
        assert_eq!(end_user_limits(&e, row("vip-user"), &both).rpm_limit, None);
        // a tier id that names nothing leaves the USD cap; no default: no limits
        let dangling = EndUserDefault {
            max_budget: Some(0.5),
            budget_id: Some("ghost".into()),
        };
        assert_eq!(end_user_limits(&e, None, &dangling).max_budget, Some(0.5));
        let tier_only = EndUserDefault {
            max_budget: None,
            budget_id: Some("eu-default".into()),
        };
        assert_eq!(end_user_limits(&e, None, &tier_only).max_budget, Some(5.0));
        assert!(end_user_limits(&e, None, &EndUserDefault::default()).is_empty());
        // on the request path: a new end user's scope carries the default
        let facts = RequestFacts {
            end_user: Some("first-timer"),
            tags: &[],
            model_group: "m",
            ..RequestFacts::default()
        };
        let s = build(&e, None, facts, &Limits::default(), &both).unwrap();
        assert_eq!(s[0].key, ScopeKey::new(ScopeKind::EndUser, "first-timer"));
        assert_eq!(s[0].limits.max_budget, Some(2.0));
        assert!(needs_token_count(&s));
    }
}
