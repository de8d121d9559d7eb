//! [`TeamModels`]: model groups one team owns (LiteLLM `model_info.team_id`, added through
//! `/model/new` with a team), each stored under a unique internal name
//! (`model_name_<team_id>_<uuid>`) and called by that team under its public name
//! (`model_info.team_public_model_name`).
//!
//! The rule is LiteLLM's (`Router.map_team_model` and `filter_team_based_models` in
//! `litellm/router.py`, `litellm/router_utils/common_utils.py`): a key of the owning team
//! that asks for the public name is routed to the internal group; anyone else neither
//! reaches the group by its public name nor by its internal one.

use std::collections::HashMap;

/// The team-owned model groups of a router (empty for most gateways: then every lookup is
/// one `is_empty` branch).
#[derive(Debug, Clone, Default)]
pub struct TeamModels {
    /// Internal group name → owning team id.
    owner: HashMap<String, String>,
    /// Team id → public name → internal group name.
    public: HashMap<String, HashMap<String, String>>,
}

impl TeamModels {
    /// From `(internal group name, team id, public name)` triples, one per team-owned
    /// deployment. When two groups of one team share a public name, the first wins (LiteLLM's
    /// `map_team_model` returns the first deployment it finds).
    pub fn from_triples(triples: impl IntoIterator<Item = (String, String, String)>) -> Self {
        let mut t = Self::default();
        for (group, team, public) in triples {
            t.public
                .entry(team.clone())
                .or_default()
                .entry(public)
                .or_insert_with(|| group.clone());
            t.owner.entry(group).or_insert(team);
        }
        t
    }

    /// Whether no group is team-owned.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.owner.is_empty()
    }

    /// The internal group name team `team_id` reaches under `public`, if it owns one.
    pub fn internal(&self, team_id: &str, public: &str) -> Option<&str> {
        self.public.get(team_id)?.get(public).map(String::as_str)
    }

    /// The team owning the group named `group`, if a team owns it.
    pub fn owner(&self, group: &str) -> Option<&str> {
        self.owner.get(group).map(String::as_str)
    }

    /// `(public name, internal group name)` of every group team `team_id` owns, sorted by
    /// public name.
    pub fn of_team(&self, team_id: &str) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self
            .public
            .get(team_id)
            .map(|m| m.iter().map(|(p, g)| (p.as_str(), g.as_str())).collect())
            .unwrap_or_default();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> String {
        x.to_owned()
    }

    #[test]
    fn maps_public_names_per_team_and_knows_owners() {
        let t = TeamModels::from_triples([
            (s("model_name_t1_a"), s("t1"), s("gpt-team")),
            (s("model_name_t1_b"), s("t1"), s("gpt-team")),
            (s("model_name_t2_c"), s("t2"), s("gpt-team")),
        ]);
        assert!(!t.is_empty());
        assert_eq!(t.internal("t1", "gpt-team"), Some("model_name_t1_a"));
        assert_eq!(t.internal("t2", "gpt-team"), Some("model_name_t2_c"));
        assert_eq!(t.internal("t3", "gpt-team"), None);
        assert_eq!(t.internal("t1", "model_name_t1_a"), None);
        assert_eq!(t.owner("model_name_t1_b"), Some("t1"));
        assert_eq!(t.owner("gpt-team"), None);
        assert_eq!(t.of_team("t2"), vec![("gpt-team", "model_name_t2_c")]);
        assert!(TeamModels::default().is_empty());
    }

    #[test]
    fn team_owned_groups_leave_the_public_names_but_still_resolve() {
        use crate::testutil::{group, router};
        let r = router(
            vec![group("shared", &["d1"]), group("model_name_t1_a", &["d2"])],
            crate::RouterConfig::default(),
        )
        .with_team_models(TeamModels::from_triples([(
            s("model_name_t1_a"),
            s("t1"),
            s("gpt-team"),
        )]));
        assert_eq!(r.public_names().collect::<Vec<_>>(), vec!["shared"]);
        assert_eq!(
            r.teams().internal("t1", "gpt-team"),
            Some("model_name_t1_a")
        );
        assert!(r.resolve("model_name_t1_a").is_ok());
        assert!(r.resolve("gpt-team").is_err());
    }
}
