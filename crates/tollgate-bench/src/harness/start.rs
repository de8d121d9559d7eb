//! Starting a gateway under test: its config rendered once, each replica started on its own
//! port and waited for, the governed scenario's virtual key made on the first replica, and
//! one request probed through every replica (a key made on one replica must work on all:
//! for a fleet that is what its identity propagation promises, so the probe waits for it).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{GatewayOutcome, HarnessConfig, build_workload};
use crate::error::BenchError;
use crate::gateway::{GatewayDef, Placeholders};
use crate::process::{self, Launch, Managed};
use crate::workload::Workload;

/// How long a replica other than the first may take to accept the key made on the first.
const KEY_PROPAGATION: Duration = Duration::from_secs(10);

/// A started gateway: one process and base URL per replica, and the workload to send.
pub(super) struct Started {
    /// The replicas' processes, in start order.
    pub procs: Vec<Managed>,
    /// Their base URLs.
    pub bases: Vec<String>,
    /// The scenario's requests, with the gateway's headers (or the governed key).
    pub workload: Workload,
    /// The definition's Redis, rendered.
    pub redis_url: Option<String>,
}

/// Starts `def`'s replicas. `Ok(None)`: the program is not installed (`outcome` says so).
///
/// Errors: a replica that does not start or become healthy, the key that cannot be made,
/// a probe that fails.
pub(super) async fn start(
    cfg: &HarnessConfig,
    def: &GatewayDef,
    upstream_url: &str,
    outcome: &mut GatewayOutcome,
) -> Result<Option<Started>, BenchError> {
    let ph = placeholders(cfg, def, upstream_url)?;
    // `$NAME` candidates are read from the environment (skipped when unset or empty).
    let candidates: Vec<String> = def
        .program
        .iter()
        .filter_map(|p| match p.strip_prefix('$') {
            Some(var) => std::env::var(var).ok().filter(|v| !v.is_empty()),
            None => Some(ph.render(p)),
        })
        .collect();
    let Some(program) = process::find_program(&candidates) else {
        outcome.status = "skipped".into();
        outcome.detail = format!("not installed (looked for {})", candidates.join(", "));
        return Ok(None);
    };
    outcome.version = process::version_of(&program, &def.version_args, Duration::from_secs(60));
    let workdir = PathBuf::from(ph.render("{workdir}"));
    std::fs::create_dir_all(&workdir)
        .map_err(|e| BenchError::io(format!("create {}", workdir.display()), e))?;
    if let Some(t) = &def.config_template {
        let src = cfg.bench_dir.join(t);
        let text = std::fs::read_to_string(&src)
            .map_err(|e| BenchError::io(format!("read {}", src.display()), e))?;
        let rendered = ph.render(&text);
        let dst = PathBuf::from(ph.render("{config}"));
        std::fs::write(&dst, &rendered)
            .map_err(|e| BenchError::io(format!("write {}", dst.display()), e))?;
        outcome.config = Some(rendered);
    }
    let mut procs = Vec::with_capacity(def.replicas);
    let mut bases = Vec::with_capacity(def.replicas);
    for replica in 0..def.replicas.max(1) {
        let mut ph = ph.clone();
        if replica > 0 {
            ph.values.insert("port", process::free_port()?.to_string());
            ph.values.insert("replica", replica.to_string());
        }
        let log = if def.replicas > 1 {
            format!("{}-{replica}.log", def.name)
        } else {
            format!("{}.log", def.name)
        };
        let mut proc_ = Managed::spawn(&Launch {
            name: def.name.clone(),
            program: program.display().to_string(),
            args: def.args.iter().map(|a| ph.render(a)).collect(),
            env: def
                .env
                .iter()
                .map(|(k, v)| (k.clone(), ph.render(v)))
                .collect(),
            cwd: Some(workdir.clone()),
            log: Some(workdir.join(log)),
        })?;
        process::wait_healthy(
            &mut proc_,
            &ph.render(&def.health_url),
            &def.header_pairs(&ph),
            Duration::from_secs_f64(def.startup_timeout_s),
        )
        .await?;
        procs.push(proc_);
        bases.push(ph.render(&def.base_url));
    }
    let headers = def.header_pairs(&ph);
    let headers = if cfg.scenario.governed() {
        governed_headers(def, &bases[0], headers).await?
    } else {
        headers
    };
    let workload = build_workload(cfg, headers)?;
    let timeout = cfg.request_timeout.max(Duration::from_secs(60));
    for (i, (base, proc_)) in bases.iter().zip(&procs).enumerate() {
        if i == 0 {
            probe(def, base, &workload, timeout, proc_).await?;
            continue;
        }
        let until = Instant::now() + KEY_PROPAGATION;
        loop {
            match probe(def, base, &workload, timeout, proc_).await {
                Ok(()) => break,
                Err(e) if Instant::now() >= until => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    Ok(Some(Started {
        procs,
        bases,
        workload,
        redis_url: def.redis_url.as_deref().map(|u| ph.render(u)),
    }))
}

/// Sends the workload's first request once through the gateway and fails
/// with the status and body when it is not 2xx: a misconfigured gateway is
/// reported instead of being measured as a fast error source.
pub(super) async fn probe(
    def: &GatewayDef,
    base: &str,
    w: &Workload,
    timeout: Duration,
    proc_: &Managed,
) -> Result<(), BenchError> {
    let t = match w {
        Workload::Single { templates, .. } => templates.first(),
        Workload::Session { turns } => turns.first(),
    };
    let Some(t) = t else { return Ok(()) };
    let headers: Vec<(String, String)> = t
        .headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .filter(|(k, _)| k != "content-type")
        .collect();
    let url = format!("{base}{}", t.path);
    let call = crate::client::call(t.method.clone(), &url, &headers, Some(t.body.clone()));
    let fail = |reason: String| BenchError::Process {
        name: def.name.clone(),
        reason: format!("probe {url}: {reason}; log:\n{}", proc_.log_tail(20)),
    };
    match tokio::time::timeout(timeout, call).await {
        Err(_) => Err(fail(format!("no answer within {timeout:?}"))),
        Ok(Err(e)) => Err(fail(e)),
        Ok(Ok((status, _))) if (200..300).contains(&status) => Ok(()),
        Ok(Ok((status, body))) => {
            let text = String::from_utf8_lossy(&body);
            Err(fail(format!(
                "HTTP {status}: {}",
                text.chars().take(300).collect::<String>()
            )))
        }
    }
}

fn placeholders(
    cfg: &HarnessConfig,
    def: &GatewayDef,
    upstream_url: &str,
) -> Result<Placeholders, BenchError> {
    let port = process::free_port()?;
    let run = format!("{}-{port}", std::process::id());
    let host = upstream_url.trim_start_matches("http://").to_string();
    let upstream_port = host
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .unwrap_or_default();
    let workdir = cfg.work_dir.join(&def.name);
    let config_name = def
        .config_template
        .as_deref()
        .and_then(|t| std::path::Path::new(t).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    let mut ph = Placeholders::default();
    ph.values.insert("port", port.to_string());
    ph.values.insert("replica", "0".to_string());
    ph.values.insert("run", run);
    ph.values.insert("upstream", upstream_url.to_string());
    ph.values.insert("upstream_host", host);
    ph.values.insert("upstream_port", upstream_port);
    ph.values.insert("workdir", workdir.display().to_string());
    ph.values
        .insert("config", workdir.join(config_name).display().to_string());
    ph.values
        .insert("bench", cfg.bench_dir.display().to_string());
    ph.values.insert("repo", cfg.repo_dir.display().to_string());
    Ok(ph)
}

/// Creates a virtual key as the definition's `[governed]` section says and
/// returns the headers with `authorization` replaced by that key.
///
/// Errors: [`BenchError::Governed`] when the section is missing, the call
/// fails or answers non-2xx, or the response lacks the key field.
pub async fn governed_headers(
    def: &GatewayDef,
    base: &str,
    mut headers: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, BenchError> {
    let err = |reason: String| BenchError::Governed {
        name: def.name.clone(),
        reason,
    };
    let setup = def
        .governed
        .as_ref()
        .ok_or_else(|| err("no [governed] section".into()))?;
    let (status, body) = crate::client::call(
        http::Method::POST,
        &format!("{base}{}", setup.path),
        &headers,
        Some(bytes::Bytes::from(setup.body.clone())),
    )
    .await
    .map_err(err)?;
    if !(200..300).contains(&status) {
        return Err(err(format!("{} answered HTTP {status}", setup.path)));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|e| err(format!("response is not JSON: {e}")))?;
    let key = v[setup.key_field.as_str()].as_str().ok_or_else(|| {
        err(format!(
            "response has no string field {:?}",
            setup.key_field
        ))
    })?;
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    headers.push(("authorization".into(), format!("Bearer {key}")));
    Ok(headers)
}
