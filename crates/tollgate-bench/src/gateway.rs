//! Gateways under test, described as data (`bench/gateways/*.toml`).
//!
//! A definition names the command that starts the gateway, the config file
//! it reads (rendered from a template), where to check health, the base URL
//! and headers clients use, and the scenarios it supports. Strings may use
//! these placeholders, replaced before start:
//!
//! | placeholder | value |
//! |---|---|
//! | `{port}` | free loopback port chosen for the gateway (for each replica its own) |
//! | `{replica}` | the replica's number, from 0 (`replicas` > 1) |
//! | `{run}` | a token unique to this start of the gateway (e.g. a Redis key prefix, so that a
//! sweep never meets the counters of an earlier one) |
//! | `{upstream}` | mock base URL, e.g. `http://127.0.0.1:41234` |
//! | `{upstream_host}` / `{upstream_port}` | its `host:port` / port |
//! | `{config}` | path of the rendered config file |
//! | `{workdir}` | per-gateway scratch directory (pid files, logs) |
//! | `{bench}` / `{repo}` | the `bench/` directory / the repository root |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::BenchError;
use crate::workload::Scenario;

/// One gateway definition file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayDef {
    /// Short name used in tables, plots and `--gateways`.
    pub name: String,
    /// One-line description (what it is, which version family).
    #[serde(default)]
    pub description: String,
    /// Candidate programs; the first that exists (path) or is in `PATH` (bare name) is used.
    pub program: Vec<String>,
    /// Arguments (placeholders allowed).
    #[serde(default)]
    pub args: Vec<String>,
    /// Arguments that make the program print its version (stdout or stderr).
    #[serde(default)]
    pub version_args: Vec<String>,
    /// Config template, relative to the `bench/` directory; rendered to `{config}`.
    #[serde(default)]
    pub config_template: Option<String>,
    /// Extra environment variables (placeholders allowed).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// URL polled until it answers below HTTP 500.
    pub health_url: String,
    /// Base URL clients send requests to (scenario paths are appended).
    pub base_url: String,
    /// Headers sent with every benchmark request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Seconds to wait for health after start.
    #[serde(default = "default_startup_timeout")]
    pub startup_timeout_s: f64,
    /// Scenarios the gateway can run.
    pub capabilities: Capabilities,
    /// How to obtain a virtual key for the governed scenario.
    #[serde(default)]
    pub governed: Option<GovernedSetup>,
    /// Processes started side by side (each on its own `{port}`, one rendered config); the
    /// load is spread over them connection by connection, as behind a round-robin load
    /// balancer, and their CPU and RSS are summed. Default 1.
    #[serde(default = "default_replicas")]
    pub replicas: usize,
    /// A Redis the gateway talks to (placeholders allowed): its `INFO commandstats` is read
    /// before and after every gateway run, and the commands per request are reported.
    #[serde(default)]
    pub redis_url: Option<String>,
}

fn default_replicas() -> usize {
    1
}

fn default_startup_timeout() -> f64 {
    30.0
}

/// What a gateway supports.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Scenarios this gateway runs; others are reported as unavailable.
    pub scenarios: Vec<Scenario>,
}

/// Creation of a virtual key before the governed scenario: `POST {base_url}{path}`
/// with the definition's headers (master key) and `body`; the new key is read
/// from the response's JSON field `key_field` and sent as `Authorization: Bearer`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GovernedSetup {
    /// Path of the key-generation endpoint, e.g. `/key/generate`.
    pub path: String,
    /// JSON body (budget, TPM/RPM limits, models).
    pub body: String,
    /// Field of the response holding the key, e.g. `key`.
    #[serde(default = "default_key_field")]
    pub key_field: String,
}

fn default_key_field() -> String {
    "key".into()
}

/// Values substituted into a definition's strings.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    /// Name → value, without braces.
    pub values: BTreeMap<&'static str, String>,
}

impl Placeholders {
    /// Replaces every `{name}` whose name is known; unknown braces are kept.
    pub fn render(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (k, v) in &self.values {
            out = out.replace(&format!("{{{k}}}"), v);
        }
        out
    }
}

impl GatewayDef {
    /// Parses a definition from TOML text; `path` is used in errors only.
    ///
    /// Errors: [`BenchError::Definition`] for invalid TOML, unknown fields or
    /// scenario names, an empty `program` list or an empty name.
    pub fn parse(text: &str, path: &Path) -> Result<Self, BenchError> {
        let def: GatewayDef = toml::from_str(text).map_err(|e| BenchError::Definition {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let bad = |reason: &str| BenchError::Definition {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        if def.name.trim().is_empty() {
            return Err(bad("name is empty"));
        }
        if def.program.is_empty() {
            return Err(bad("program lists no candidate"));
        }
        if let Some(s) = def.capabilities.scenarios.iter().find(|s| s.governed())
            && def.governed.is_none()
        {
            return Err(bad(&format!("capability {s} needs a [governed] section")));
        }
        if def.replicas == 0 {
            return Err(bad("replicas must be at least 1"));
        }
        Ok(def)
    }

    /// Reads every `*.toml` in `dir`, sorted by file name.
    ///
    /// Errors: unreadable directory or any invalid definition.
    pub fn load_dir(dir: &Path) -> Result<Vec<Self>, BenchError> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| BenchError::io(format!("read {}", dir.display()), e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|p| {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| BenchError::io(format!("read {}", p.display()), e))?;
                Self::parse(&text, p)
            })
            .collect()
    }

    /// Whether the gateway declares `scenario`.
    pub fn supports(&self, scenario: Scenario) -> bool {
        self.capabilities.scenarios.contains(&scenario)
    }

    /// Headers rendered and as pairs.
    pub fn header_pairs(&self, ph: &Placeholders) -> Vec<(String, String)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.clone(), ph.render(v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEF: &str = r#"
name = "demo"
program = ["/nonexistent/demo", "sh"]
args = ["--port", "{port}", "--config", "{config}"]
config_template = "configs/demo.yaml"
health_url = "http://127.0.0.1:{port}/health"
base_url = "http://127.0.0.1:{port}"
[headers]
authorization = "Bearer sk-demo"
[capabilities]
scenarios = ["forwarding", "large-prompts"]
"#;

    #[test]
    fn parses_definition_and_capabilities() {
        let d = GatewayDef::parse(DEF, Path::new("demo.toml")).unwrap();
        assert_eq!(d.name, "demo");
        assert!(d.supports(Scenario::Forwarding));
        assert!(d.supports(Scenario::LargePrompts));
        assert!(!d.supports(Scenario::Governed));
        assert_eq!(d.startup_timeout_s, 30.0);
        let mut ph = Placeholders::default();
        ph.values.insert("port", "4100".into());
        assert_eq!(ph.render(&d.health_url), "http://127.0.0.1:4100/health");
        assert_eq!(ph.render("{config} {other}"), "{config} {other}");
    }

    #[test]
    fn refuses_unknown_scenario_and_governed_without_setup() {
        let bad = DEF.replace("\"large-prompts\"", "\"turbo\"");
        assert!(GatewayDef::parse(&bad, Path::new("x.toml")).is_err());
        let gov = DEF.replace("\"large-prompts\"", "\"governed\"");
        let e = GatewayDef::parse(&gov, Path::new("x.toml")).unwrap_err();
        assert!(e.to_string().contains("[governed]"), "{e}");
    }

    #[test]
    fn repository_definitions_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/gateways");
        let defs = GatewayDef::load_dir(&dir).unwrap();
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        for n in ["litellm", "nginx", "tollgate"] {
            assert!(names.contains(&n), "{names:?}");
        }
        for d in &defs {
            if let Some(t) = &d.config_template {
                assert!(dir.join("..").join(t).is_file(), "{t}");
            }
        }
    }
}
