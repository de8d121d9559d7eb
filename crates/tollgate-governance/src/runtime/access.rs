//! Model access: which model names a [`Principal`] may call (litellm-surface §4.3–§4.4,
//! a key's list narrows its team's, never widens it).
//!
//! Each layer that has a `models` list — the key, its team (else, for a personal key, its
//! user), its organization — must allow the name. A list allows a name when it is empty, holds
//! `all-proxy-models` or `*`, holds the name itself, an access group containing it
//! (`model_info.access_groups` in the config), or a wildcard pattern matching it
//! (`openai/*`). On a key, `all-team-models` defers to the team; `no-default-models` alone
//! allows nothing but the access groups beside it.
//!
//! Wildcards follow [`tollgate_protocol::model_name`], the rule the router's wildcard groups
//! use too: `bedrock/*` admits `bedrock/<non-empty rest>` and nothing else (not `bedrockz/x`,
//! `BEDROCK/x`, `bedrock` or `bedrock/`). An access group's members are matched by the same
//! rule, so a group holding the deployment `openai/*` admits `openai/gpt-4o`.
//!
//! The name checked is the one that will actually be called: after key/team aliases and the
//! router's `model_group_alias`, the model group's name — or, for a wildcard group, the
//! concrete model name requested — never just the name the client wrote.

use std::collections::HashMap;

use tollgate_protocol::model_name::entry_admits;

use super::cache::Entities;
use super::principal::Principal;

/// Access groups from the config: group name → model names in it.
#[derive(Debug, Clone, Default)]
pub struct AccessGroups(HashMap<String, Vec<String>>);

impl AccessGroups {
    /// From `(access group, model name)` pairs (one per deployment and group it lists).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut m: HashMap<String, Vec<String>> = HashMap::new();
        for (g, model) in pairs {
            let v = m.entry(g.to_owned()).or_default();
            if !v.iter().any(|x| x == model) {
                v.push(model.to_owned());
            }
        }
        Self(m)
    }

    /// The models of group `g`, if it is one.
    pub fn get(&self, g: &str) -> Option<&[String]> {
        self.0.get(g).map(Vec::as_slice)
    }
}

/// Which layer refused a model (LiteLLM's 403 error types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeniedBy {
    /// The key's `models`.
    Key,
    /// The team's `models`.
    Team,
    /// The user's `models` (personal keys).
    User,
    /// The organization's `models`.
    Organization,
    /// The end user's (customer's) `models`.
    Customer,
}

impl DeniedBy {
    /// `key_model_access_denied`, `team_model_access_denied`, ...
    pub fn error_type(self) -> &'static str {
        match self {
            DeniedBy::Key => "key_model_access_denied",
            DeniedBy::Team => "team_model_access_denied",
            DeniedBy::User => "user_model_access_denied",
            DeniedBy::Organization => "org_model_access_denied",
            DeniedBy::Customer => "customer_model_access_denied",
        }
    }
}

/// Whether the list `models` allows `name` (see the module docs). `all-team-models` allows
/// everything here (the team layer decides).
pub fn list_allows(models: &[String], name: &str, groups: &AccessGroups) -> bool {
    if models.is_empty() {
        return true;
    }
    models.iter().any(|m| match m.as_str() {
        "all-proxy-models" | "*" | "all-team-models" => true,
        "no-default-models" => false,
        m => {
            entry_admits(m, name)
                || groups
                    .get(m)
                    .is_some_and(|g| g.iter().any(|x| entry_admits(x, name)))
        }
    })
}

impl Principal {
    /// `None` when every layer allows `name`; else the first layer that refuses it.
    pub fn model_denial(&self, name: &str, groups: &AccessGroups) -> Option<DeniedBy> {
        if !list_allows(&self.key.models, name, groups) {
            return Some(DeniedBy::Key);
        }
        match (&self.team, &self.user) {
            (Some(t), _) if !list_allows(&t.models, name, groups) => return Some(DeniedBy::Team),
            (None, Some(u)) if !list_allows(&u.models, name, groups) => {
                return Some(DeniedBy::User);
            }
            _ => {}
        }
        if let Some(o) = &self.organization
            && !list_allows(&o.models, name, groups)
        {
            return Some(DeniedBy::Organization);
        }
        None
    }
}

impl Principal {
    /// As [`Principal::model_denial`], for a model group the key's own team owns (a
    /// `/model/new` deployment with `model_info.team_id`, called by `name`, its public name):
    /// the team layer allows it, since LiteLLM's `_add_team_model_to_db` adds the public name
    /// to the team's `models` (`team_model_add`); the key's and the organization's lists are
    /// checked on `name`.
    pub fn team_model_denial(&self, name: &str, groups: &AccessGroups) -> Option<DeniedBy> {
        if !list_allows(&self.key.models, name, groups) {
            return Some(DeniedBy::Key);
        }
        if let Some(o) = &self.organization
            && !list_allows(&o.models, name, groups)
        {
            return Some(DeniedBy::Organization);
        }
        None
    }
}

impl Entities {
    /// `Some(DeniedBy::Customer)` when the end user `id` has a row whose `models` list does
    /// not allow `name` (same entries and matching as a key's list). An end user without a row,
    /// or with an empty list, restricts nothing: LiteLLM's customer allow-list, checked after
    /// the key, team, user and organization lists (`customer_model_access_denied`).
    pub fn end_user_model_denial(
        &self,
        id: &str,
        name: &str,
        groups: &AccessGroups,
    ) -> Option<DeniedBy> {
        let row = self.end_users.get(id)?;
        (!list_allows(&row.models, name, groups)).then_some(DeniedBy::Customer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Team, User, VerificationToken};
    use std::sync::Arc;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| (*s).to_owned()).collect()
    }

    fn principal(key: &[&str], team: Option<&[&str]>, user: Option<&[&str]>) -> Principal {
        Principal {
            key: Arc::new(VerificationToken {
                models: v(key),
                ..Default::default()
            }),
            key_tier: None,
            team: team.map(|t| {
                Arc::new(Team {
                    models: v(t),
                    ..Default::default()
                })
            }),
            user: user.map(|u| {
                Arc::new(User {
                    models: v(u),
                    ..Default::default()
                })
            }),
            membership: None,
            member_tier: None,
            organization: None,
            organization_tier: None,
        }
    }

    #[test]
    fn list_rules() {
        let g = AccessGroups::from_pairs([("grp", "model-a"), ("grp", "model-b")]);
        assert!(list_allows(&[], "x", &g));
        assert!(list_allows(&v(&["all-proxy-models"]), "x", &g));
        assert!(list_allows(&v(&["grp"]), "model-a", &g));
        assert!(!list_allows(&v(&["grp"]), "model-c", &g));
        assert!(list_allows(&v(&["openai/*"]), "openai/gpt-4o", &g));
        assert!(!list_allows(&v(&["openai/*"]), "anthropic/claude", &g));
        assert!(!list_allows(&v(&["openai/*"]), "openai/", &g));
        assert!(!list_allows(
            &v(&["openai/gpt-4o-mini"]),
            "openai/gpt-4o",
            &g
        ));
        assert!(!list_allows(&v(&["no-default-models"]), "model-a", &g));
        assert!(list_allows(
            &v(&["no-default-models", "grp"]),
            "model-a",
            &g
        ));
    }

    /// One wildcard rule in every list: key, team, user and the access groups beside them.
    #[test]
    fn wildcards_admit_their_first_segment_in_every_list() {
        let g = AccessGroups::from_pairs([("cloud", "bedrock/*"), ("cloud", "gpt-4o")]);
        let refused = [
            "bedrockz/x",
            "bedrock-evil/x",
            "BEDROCK/x",
            "bedrock",
            "bedrock/",
            "bedrock/../x",
            "bedrock//x",
        ];
        for list in [&["bedrock/*"][..], &["cloud"][..]] {
            assert!(list_allows(&v(list), "bedrock/anthropic.claude-3", &g));
            for name in refused {
                assert!(!list_allows(&v(list), name, &g), "{list:?} {name}");
            }
        }
        let layers = [
            principal(&["bedrock/*"], None, None),
            principal(&[], Some(&["bedrock/*"]), None),
            principal(&[], None, Some(&["bedrock/*"])),
            principal(&["cloud"], None, None),
        ];
        let by = [
            Some(DeniedBy::Key),
            Some(DeniedBy::Team),
            Some(DeniedBy::User),
            Some(DeniedBy::Key),
        ];
        for (p, by) in layers.iter().zip(by) {
            assert_eq!(p.model_denial("bedrock/anthropic.claude-3", &g), None);
            for name in refused {
                assert_eq!(p.model_denial(name, &g), by, "{name}");
            }
        }
    }

    #[test]
    fn every_layer_must_allow() {
        let g = AccessGroups::default();
        // The key allows only pricey-model; the team allows both.
        let p = principal(
            &["pricey-model"],
            Some(&["cheap-model", "pricey-model"]),
            None,
        );
        assert_eq!(p.model_denial("cheap-model", &g), Some(DeniedBy::Key));
        assert_eq!(p.model_denial("pricey-model", &g), None);
        // all-team-models defers to the team.
        let p = principal(&["all-team-models"], Some(&["a"]), None);
        assert_eq!(p.model_denial("a", &g), None);
        assert_eq!(p.model_denial("b", &g), Some(DeniedBy::Team));
        // personal key: the user's list applies.
        let p = principal(&[], None, Some(&["a"]));
        assert_eq!(p.model_denial("b", &g), Some(DeniedBy::User));
        assert_eq!(DeniedBy::Key.error_type(), "key_model_access_denied");
    }

    #[test]
    fn team_owned_models_skip_the_team_list_only() {
        let g = AccessGroups::default();
        // The team lists only gpt-4o; its own model "team-gpt" is still allowed.
        let p = principal(&[], Some(&["gpt-4o"]), None);
        assert_eq!(p.model_denial("team-gpt", &g), Some(DeniedBy::Team));
        assert_eq!(p.team_model_denial("team-gpt", &g), None);
        // The key's own list still applies.
        let p = principal(&["gpt-4o"], Some(&[]), None);
        assert_eq!(p.team_model_denial("team-gpt", &g), Some(DeniedBy::Key));
        let p = principal(&["all-team-models"], Some(&["gpt-4o"]), None);
        assert_eq!(p.team_model_denial("team-gpt", &g), None);
    }
}
