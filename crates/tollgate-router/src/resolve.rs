//! Name resolution: requested model → model group (+ the upstream model id to send).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use std::time::Instant;

use tollgate_protocol::model_name::wildcard_match;

use crate::config::RouterConfig;
use crate::group::{ModelGroup, RoutedDeployment};
use crate::rng::SharedRng;
use crate::select::{SelectCtx, Selection};
use crate::state::{InMemoryState, RouterState};
use crate::team::TeamModels;

/// Start and end byte of a wildcard match.
type ByteRange = (usize, usize);

/// Why a requested model cannot be routed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RouteError {
    /// No group, alias or wildcard matches the name.
    #[error("model '{0}' not found")]
    ModelNotFound(String),
    /// The group exists but has no deployment.
    #[error("no deployments available for model '{0}'")]
    NoDeployments(String),
}

/// All model groups, aliases and wildcard groups, the routing settings and the
/// per-deployment state (in flight, usage, latency, cooldowns).
#[derive(Debug)]
pub struct Router {
    groups: HashMap<String, Arc<ModelGroup>>,
    /// Wildcard groups in config order.
    wildcards: Vec<Arc<ModelGroup>>,
    aliases: HashMap<String, String>,
    /// Public names in config order, for listings.
    names: Vec<String>,
    /// Deployment id of each state slot.
    slot_ids: Vec<String>,
    pub(crate) config: RouterConfig,
    pub(crate) state: Box<dyn RouterState>,
    pub(crate) rng: SharedRng,
    /// Team-owned groups ([`TeamModels`]).
    teams: TeamModels,
}

impl Default for Router {
    fn default() -> Self {
        Router::new(Vec::new(), HashMap::new())
    }
}

/// The outcome of routing: which group, which deployment and which upstream model id.
#[derive(Debug, Clone)]
pub struct Route<'r> {
    /// The model group.
    pub group: &'r Arc<ModelGroup>,
    /// The chosen deployment.
    pub deployment: &'r RoutedDeployment,
    /// Model id to send upstream (differs per request for wildcard deployments).
    pub upstream_model: Cow<'r, str>,
}

impl Router {
    /// Builds the router from groups (in config order) and `model_group_alias`, with
    /// default settings ([`RouterConfig::default`]) and in-process state.
    pub fn new(groups: Vec<ModelGroup>, aliases: HashMap<String, String>) -> Self {
        Self::with_config(groups, aliases, RouterConfig::default())
    }

    /// Builds the router with settings and in-process state ([`InMemoryState`]).
    pub fn with_config(
        groups: Vec<ModelGroup>,
        aliases: HashMap<String, String>,
        config: RouterConfig,
    ) -> Self {
        Self::with_state(groups, aliases, config, |ids| {
            Box::new(InMemoryState::new(ids.len(), Instant::now()))
        })
    }

    /// Builds the router with settings and a state store made by `make_state` from the
    /// deployment ids in slot order (slot `i` is `ids[i]`). A store with fewer slots than ids
    /// reads the missing ones as idle and never cools them down.
    pub fn with_state(
        groups: Vec<ModelGroup>,
        aliases: HashMap<String, String>,
        config: RouterConfig,
        make_state: impl FnOnce(&[String]) -> Box<dyn RouterState>,
    ) -> Self {
        let seed = config.rng_seed.unwrap_or_else(rand::random);
        let mut slot_ids = Vec::new();
        let mut prepared = Vec::with_capacity(groups.len());
        for mut g in groups {
            g.slot_base = slot_ids.len();
            slot_ids.extend(g.deployments.iter().map(|d| d.deployment.id.clone()));
            prepared.push(g);
        }
        let state = make_state(&slot_ids);
        let mut r = Router {
            groups: HashMap::new(),
            wildcards: Vec::new(),
            aliases,
            names: Vec::new(),
            slot_ids,
            config,
            state,
            rng: SharedRng::new(seed),
            teams: TeamModels::default(),
        };
        for g in prepared {
            let g = Arc::new(g);
            if g.wildcard {
                r.wildcards.push(Arc::clone(&g));
            } else {
                r.names.push(g.name.clone());
            }
            r.groups.insert(g.name.clone(), g);
        }
        r
    }

    /// This router with `teams` as its team-owned groups (their internal names then leave
    /// [`Router::public_names`]).
    pub fn with_team_models(mut self, teams: TeamModels) -> Self {
        self.teams = teams;
        self
    }

    /// The team-owned groups.
    #[inline]
    pub fn teams(&self) -> &TeamModels {
        &self.teams
    }

    /// Concrete (non-wildcard) group names in config order (team-owned ones left out), then
    /// aliases of existing groups.
    pub fn public_names(&self) -> impl Iterator<Item = &str> {
        let mut aliases: Vec<&str> = self
            .aliases
            .iter()
            .filter(|(a, target)| {
                self.groups.contains_key(*target) && !self.groups.contains_key(*a)
            })
            .map(|(a, _)| a.as_str())
            .collect();
        aliases.sort_unstable();
        self.names
            .iter()
            .map(String::as_str)
            .filter(|n| self.teams.owner(n).is_none())
            .chain(aliases)
    }

    /// The concrete (non-wildcard) model groups, in config order.
    pub fn groups(&self) -> impl Iterator<Item = &Arc<ModelGroup>> {
        self.names.iter().filter_map(|n| self.groups.get(n))
    }

    /// The wildcard model groups (`bedrock/*`, `*`), in config order.
    pub fn wildcard_groups(&self) -> impl Iterator<Item = &Arc<ModelGroup>> {
        self.wildcards.iter()
    }

    /// The settings in force.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// The state store.
    pub fn state(&self) -> &dyn RouterState {
        self.state.as_ref()
    }

    /// Deployment id of each state slot.
    pub fn slot_ids(&self) -> &[String] {
        &self.slot_ids
    }

    /// Whether any group is a wildcard.
    pub fn has_wildcards(&self) -> bool {
        !self.wildcards.is_empty()
    }

    /// The group a name resolves to, with the part a wildcard matched (`None` for exact names).
    pub fn resolve<'a>(
        &'a self,
        requested: &'a str,
    ) -> Result<(&'a Arc<ModelGroup>, Option<&'a str>), RouteError> {
        let name = self
            .aliases
            .get(requested)
            .map_or(requested, String::as_str);
        self.match_group(name)
            .map(|(g, range)| (g, range.map(|(a, b)| &name[a..b])))
            .ok_or_else(|| RouteError::ModelNotFound(requested.to_owned()))
    }

    /// The group for a name (after alias mapping), with the byte range of `name` a wildcard
    /// matched. Wildcard groups match by [`tollgate_protocol::model_name::wildcard_match`], the
    /// rule of every model access list: `openai/*` takes `openai/<non-empty rest>` only.
    fn match_group(&self, name: &str) -> Option<(&Arc<ModelGroup>, Option<ByteRange>)> {
        if let Some(g) = self.groups.get(name) {
            return Some((g, None));
        }
        // The most literal text wins among wildcard groups, so "openai/*" beats "*"; the first
        // in config order among equals.
        let mut best: Option<(&Arc<ModelGroup>, ByteRange, usize)> = None;
        for g in &self.wildcards {
            if let Some(range) = wildcard_match(&g.name, name) {
                let literal = g.name.len() - g.name.matches('*').count();
                if best.is_none_or(|(_, _, l)| literal > l) {
                    best = Some((g, range, literal));
                }
            }
        }
        best.map(|(g, range, _)| (g, Some(range)))
    }

    /// The group a name resolves to, with the wildcard-matched part copied out (`None` for
    /// exact names). For plans, whose fallback names may be owned by the request.
    pub(crate) fn lookup(&self, requested: &str) -> Option<(&Arc<ModelGroup>, Option<String>)> {
        let name = self
            .aliases
            .get(requested)
            .map_or(requested, String::as_str);
        self.match_group(name)
            .map(|(g, range)| (g, range.map(|(a, b)| name[a..b].to_owned())))
    }

    /// Resolves `requested` and picks one deployment with the configured strategy, skipping
    /// deployments cooling down (and, with pre-call checks, those over their `rpm`/`tpm`),
    /// at the current time. No in-flight tracking or outcome recording: use
    /// [`Router::plan`] for that.
    ///
    /// Errors: [`RouteError::ModelNotFound`]; [`RouteError::NoDeployments`] when the group
    /// is empty or every deployment is unavailable.
    pub fn route<'a>(&'a self, requested: &'a str) -> Result<Route<'a>, RouteError> {
        let (group, matched) = self.resolve(requested)?;
        let ctx = SelectCtx {
            prompt_tokens: 0,
            stream: false,
            exclude: 0,
        };
        let index = match self.select(group, Instant::now(), &ctx) {
            Selection::Picked(i) => i,
            Selection::Unavailable { .. } => {
                return Err(RouteError::NoDeployments(requested.to_owned()));
            }
        };
        let deployment = &group.deployments[index];
        let upstream_model = upstream_for(
            &deployment.deployment.upstream_model,
            &Cow::Borrowed(requested),
            matched,
        );
        Ok(Route {
            group,
            deployment,
            upstream_model,
        })
    }
}

/// The upstream model id for a deployment whose model is `pattern`: the pattern with `*`
/// replaced by the wildcard-matched part, the requested name for a bare-`*` pattern without
/// a match, else the pattern itself.
pub fn upstream_for<'a>(
    pattern: &'a str,
    requested: &Cow<'a, str>,
    matched: Option<&str>,
) -> Cow<'a, str> {
    match (matched, pattern.split_once('*')) {
        (Some(m), Some((pre, suf))) => Cow::Owned(format!("{pre}{m}{suf}")),
        (None, Some(_)) => requested.clone(),
        _ => Cow::Borrowed(pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tollgate_providers::{Deployment, DeploymentSpec};

    fn dep(id: &str, group: &str, upstream: &str, weight: f64, order: u32) -> RoutedDeployment {
        let d = Deployment::build(
            DeploymentSpec {
                id: id.into(),
                model_group: group.into(),
                provider: "openai".into(),
                upstream_model: upstream.into(),
                api_base: Some("http://127.0.0.1:1/v1".into()),
                ..Default::default()
            },
            &|_| None,
        )
        .unwrap();
        RoutedDeployment {
            deployment: Arc::new(d),
            weight,
            order,
        }
    }

    fn router() -> Router {
        Router::new(
            vec![
                ModelGroup::new("gpt".into(), vec![dep("a", "gpt", "gpt-4o", 1.0, 1)]),
                ModelGroup::new("openai/*".into(), vec![dep("w", "openai/*", "*", 1.0, 1)]),
                ModelGroup::new("*".into(), vec![dep("any", "*", "*", 1.0, 1)]),
            ],
            HashMap::from([("fast".to_owned(), "gpt".to_owned())]),
        )
    }

    #[test]
    fn exact_alias_and_wildcards() {
        let r = router();
        let route = r.route("gpt").unwrap();
        assert_eq!(route.deployment.deployment.id, "a");
        assert_eq!(route.upstream_model, "gpt-4o");
        assert_eq!(r.route("fast").unwrap().deployment.deployment.id, "a");
        let w = r.route("openai/gpt-4.1").unwrap();
        assert_eq!(w.deployment.deployment.id, "w");
        assert_eq!(w.upstream_model, "gpt-4.1");
        let any = r.route("llama-3").unwrap();
        assert_eq!(any.deployment.deployment.id, "any");
        assert_eq!(any.upstream_model, "llama-3");
        assert_eq!(r.public_names().collect::<Vec<_>>(), vec!["gpt", "fast"]);
    }

    /// A wildcard group takes its first segment followed by a non-empty rest, nothing else.
    #[test]
    fn wildcard_groups_match_whole_first_segments() {
        let r = Router::new(
            vec![ModelGroup::new(
                "bedrock/*".into(),
                vec![dep("b", "bedrock/*", "*", 1.0, 1)],
            )],
            HashMap::new(),
        );
        let ok = r.route("bedrock/anthropic.claude-3").unwrap();
        assert_eq!(ok.upstream_model, "anthropic.claude-3");
        for name in [
            "bedrockz/x",
            "bedrock-evil/x",
            "BEDROCK/x",
            "bedrock",
            "bedrock/",
            "bedrock/../x",
        ] {
            assert_eq!(
                r.route(name).unwrap_err(),
                RouteError::ModelNotFound(name.into()),
                "{name}"
            );
        }
    }

    #[test]
    fn unknown_model() {
        let r = Router::new(vec![], HashMap::new());
        assert_eq!(
            r.route("x").unwrap_err(),
            RouteError::ModelNotFound("x".into())
        );
    }

    #[test]
    fn order_tier_and_weights() {
        let g = ModelGroup::new(
            "g".into(),
            vec![
                dep("backup", "g", "m", 100.0, 2),
                dep("heavy", "g", "m", 3.0, 1),
                dep("light", "g", "m", 1.0, 1),
            ],
        );
        let mut heavy = 0;
        for _ in 0..4000 {
            let id = &g.pick().unwrap().deployment.id;
            assert_ne!(
                id, "backup",
                "order 2 must not be used while order 1 exists"
            );
            if id == "heavy" {
                heavy += 1;
            }
        }
        // 3:1 weights → 75 % ± 3 %.
        assert!(
            (2880..=3120).contains(&heavy),
            "heavy picked {heavy} of 4000"
        );
    }
}
