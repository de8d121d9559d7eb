//! Name resolution: requested model → model group (+ the upstream model id to send).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::group::{ModelGroup, RoutedDeployment};

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

/// All model groups, aliases and wildcard groups.
#[derive(Debug, Default)]
pub struct Router {
    groups: HashMap<String, Arc<ModelGroup>>,
    /// Wildcard groups in config order, as (prefix, suffix, group) of a single-`*` pattern.
    wildcards: Vec<(String, String, Arc<ModelGroup>)>,
    aliases: HashMap<String, String>,
    /// Public names in config order, for listings.
    names: Vec<String>,
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
    /// Builds the router from groups (in config order) and `model_group_alias`.
    pub fn new(groups: Vec<ModelGroup>, aliases: HashMap<String, String>) -> Self {
        let mut r = Router {
            aliases,
            ..Default::default()
        };
        for g in groups {
            let g = Arc::new(g);
            if g.wildcard {
                if let Some((pre, suf)) = g.name.split_once('*') {
                    r.wildcards
                        .push((pre.to_owned(), suf.to_owned(), Arc::clone(&g)));
                }
            } else {
                r.names.push(g.name.clone());
            }
            r.groups.insert(g.name.clone(), g);
        }
        r
    }

    /// Concrete (non-wildcard) group names in config order, then aliases of existing groups.
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
        self.names.iter().map(String::as_str).chain(aliases)
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
        if let Some(g) = self.groups.get(name) {
            return Ok((g, None));
        }
        // Longest prefix wins among wildcard groups, so "openai/*" beats "*".
        self.wildcards
            .iter()
            .filter(|(pre, suf, _)| {
                name.len() >= pre.len() + suf.len()
                    && name.starts_with(pre.as_str())
                    && name.ends_with(suf.as_str())
            })
            .max_by_key(|(pre, suf, _)| pre.len() + suf.len())
            .map(|(pre, suf, g)| (g, Some(&name[pre.len()..name.len() - suf.len()])))
            .ok_or_else(|| RouteError::ModelNotFound(requested.to_owned()))
    }

    /// Resolves `requested` and picks a deployment (simple-shuffle).
    pub fn route<'a>(&'a self, requested: &'a str) -> Result<Route<'a>, RouteError> {
        let (group, matched) = self.resolve(requested)?;
        let deployment = group
            .pick()
            .ok_or_else(|| RouteError::NoDeployments(requested.to_owned()))?;
        let pattern = deployment.deployment.upstream_model.as_str();
        let upstream_model = match (matched, pattern.split_once('*')) {
            (Some(m), Some((pre, suf))) => Cow::Owned(format!("{pre}{m}{suf}")),
            (None, Some(_)) => Cow::Borrowed(requested),
            _ => Cow::Borrowed(pattern),
        };
        Ok(Route {
            group,
            deployment,
            upstream_model,
        })
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
