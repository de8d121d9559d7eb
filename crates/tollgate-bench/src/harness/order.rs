//! The order in which a sweep measures its gateways.
//!
//! One after the other (the default): a gateway is started, warmed, measured at every level and
//! repeat, and stopped before the next starts. Interleaved (`--interleave`): every gateway is
//! started and warmed first, then at each level and repeat each gateway is measured in turn,
//! the turn starting one gateway later at every repeat, so a drift of the machine over the
//! sweep's minutes (another tenant, a thermal limit, a Redis that grew) lands on every gateway
//! alike instead of on whichever came last. On 2026-12-03 the same binary read 0.42 and 0.67 ms
//! of added p50 as the third and the fourth gateway of two sweeps (`bench/README.md`). Gateways
//! wait idle while another is measured; their own timers (write-behind, feeds) keep running.
//! Gateways that share one Redis also share its function library: the last one started has
//! loaded its version for all of them.
#![expect(
    clippy::print_stderr,
    reason = "the sweep's progress is the bench CLI's stderr output"
)]

use std::time::Duration;

use super::start::{self, Started};
use super::{GatewayOutcome, HarnessConfig, RunRecord, Side, measure, redis_reading};
use crate::driver::{self, LoadSpec, Mode};
use crate::error::BenchError;
use crate::gateway::GatewayDef;
use crate::process::Managed;
use crate::redis_stats;
use crate::workload::Workload;

/// A gateway started, warmed and waiting for its runs.
struct Ready<'a> {
    def: &'a GatewayDef,
    gw: Started,
    pids: Vec<u32>,
}

/// Measures `def` at every level and repeat, then stops it.
pub(super) async fn one_gateway(
    cfg: &HarnessConfig,
    def: &GatewayDef,
    upstream_url: &str,
    direct: &Workload,
    runs: &mut Vec<RunRecord>,
) -> GatewayOutcome {
    let mut outcome = new_outcome(def);
    let result = async {
        let Some(mut ready) = prepare(cfg, def, upstream_url, &mut outcome).await? else {
            return Ok(());
        };
        for &level in &cfg.levels {
            for repeat in 1..=cfg.repeats.max(1) {
                pair(cfg, &mut ready, upstream_url, direct, level, repeat, runs).await?;
            }
        }
        stop(&mut ready, &mut outcome);
        Ok::<(), BenchError>(())
    }
    .await;
    report(result, outcome)
}

/// Starts every gateway, then measures them in turn at each level and repeat (see the module
/// docs). A gateway that fails is stopped, reported failed, and left out of later turns.
///
/// Errors: none of its own; a gateway's failure is its outcome's.
pub(super) async fn interleaved(
    cfg: &HarnessConfig,
    upstream_url: &str,
    direct: &Workload,
    runs: &mut Vec<RunRecord>,
) -> Result<Vec<GatewayOutcome>, BenchError> {
    let mut outcomes = Vec::with_capacity(cfg.gateways.len());
    let mut ready: Vec<(usize, Ready<'_>)> = Vec::new();
    for def in &cfg.gateways {
        let mut outcome = new_outcome(def);
        match prepare(cfg, def, upstream_url, &mut outcome).await {
            Ok(Some(r)) => ready.push((outcomes.len(), r)),
            Ok(None) => eprintln!(
                "[bench] {}: {} {}",
                def.name, outcome.status, outcome.detail
            ),
            Err(e) => {
                outcome.status = "failed".into();
                outcome.detail = e.to_string();
                eprintln!("[bench] {}: failed {}", def.name, outcome.detail);
            }
        }
        outcomes.push(outcome);
    }
    for &level in &cfg.levels {
        for repeat in 1..=cfg.repeats.max(1) {
            let mut failed = Vec::new();
            for turn in turns(ready.len(), repeat) {
                let Some((index, r)) = ready.get_mut(turn) else {
                    continue;
                };
                if let Err(e) = pair(cfg, r, upstream_url, direct, level, repeat, runs).await {
                    for p in &mut r.gw.procs {
                        p.stop();
                    }
                    eprintln!("[bench] {}: failed {e}", r.def.name);
                    if let Some(o) = outcomes.get_mut(*index) {
                        o.status = "failed".into();
                        o.detail = e.to_string();
                    }
                    failed.push(turn);
                }
            }
            // the others keep their turns this repeat; the failed leave the rotation after it
            failed.sort_unstable_by(|a, b| b.cmp(a));
            for turn in failed {
                ready.remove(turn);
            }
        }
    }
    for (index, mut r) in ready {
        if let Some(o) = outcomes.get_mut(index) {
            stop(&mut r, o);
            eprintln!("[bench] {}: {} {}", o.name, o.status, o.detail);
        }
    }
    Ok(outcomes)
}

/// The order of `n` gateways' turns at `repeat` (1-based): 0..n rotated left by `repeat − 1`.
fn turns(n: usize, repeat: usize) -> Vec<usize> {
    (0..n).map(|k| (k + repeat.saturating_sub(1)) % n).collect()
}

fn new_outcome(def: &GatewayDef) -> GatewayOutcome {
    GatewayOutcome {
        name: def.name.clone(),
        status: "unavailable".into(),
        detail: String::new(),
        version: None,
        config: None,
    }
}

fn report(result: Result<(), BenchError>, mut outcome: GatewayOutcome) -> GatewayOutcome {
    if let Err(e) = result {
        outcome.status = "failed".into();
        outcome.detail = e.to_string();
    }
    eprintln!(
        "[bench] {}: {} {}",
        outcome.name, outcome.status, outcome.detail
    );
    outcome
}

/// Starts `def` and warms it at the sweep's highest level. `Ok(None)`: not measured in this
/// scenario, or not installed (`outcome` says why).
async fn prepare<'a>(
    cfg: &HarnessConfig,
    def: &'a GatewayDef,
    upstream_url: &str,
    outcome: &mut GatewayOutcome,
) -> Result<Option<Ready<'a>>, BenchError> {
    if !def.supports(cfg.scenario) {
        outcome.detail = format!(
            "scenario {} is not in its capabilities ({})",
            cfg.scenario,
            def.capabilities
                .scenarios
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(None);
    }
    let Some(gw) = start::start(cfg, def, upstream_url, outcome).await? else {
        return Ok(None);
    };
    let bases: Vec<&str> = gw.bases.iter().map(String::as_str).collect();
    let top = cfg.levels.iter().copied().max().unwrap_or(1);
    eprintln!(
        "[bench] {}: healthy on {}, warming up",
        def.name,
        bases.join(" ")
    );
    let warm = driver::run_spread(
        &bases,
        gw.workload.clone(),
        LoadSpec {
            concurrency: top,
            warmup: Duration::ZERO,
            duration: cfg.gateway_warmup,
            max_requests: u64::MAX,
            mode: Mode::Closed,
            request_timeout: cfg.request_timeout,
            observe_pids: Vec::new(),
        },
    )
    .await?;
    if warm.errors > 0 {
        eprintln!(
            "[bench] {}: {} errors during warm-up (first: {})",
            def.name,
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    let pids = gw.procs.iter().map(Managed::pid).collect();
    Ok(Some(Ready { def, gw, pids }))
}

/// One direct run and one gateway run at `level`, direct first on odd repeats.
///
/// Errors: a run that fails, or a replica that exited.
async fn pair(
    cfg: &HarnessConfig,
    r: &mut Ready<'_>,
    upstream_url: &str,
    direct: &Workload,
    level: usize,
    repeat: usize,
    runs: &mut Vec<RunRecord>,
) -> Result<(), BenchError> {
    let bases: Vec<&str> = r.gw.bases.iter().map(String::as_str).collect();
    let direct_first = repeat % 2 == 1;
    for step in 0..2 {
        let side_direct = (step == 0) == direct_first;
        let (side, result) = if side_direct {
            (
                Side::Direct,
                measure(cfg, &[upstream_url], direct.clone(), level, Vec::new()).await?,
            )
        } else {
            let before = redis_reading(r.gw.redis_url.as_deref()).await;
            let mut result =
                measure(cfg, &bases, r.gw.workload.clone(), level, r.pids.clone()).await?;
            if let Some(before) = before {
                // Settlements leave in batches within 1 s of their request: wait for them
                // before reading what the run cost.
                tokio::time::sleep(Duration::from_millis(1500)).await;
                if let Some(after) = redis_reading(r.gw.redis_url.as_deref()).await {
                    result.redis = redis_stats::usage(&before, &after, result.completed);
                }
            }
            (Side::Gateway, result)
        };
        runs.push(RunRecord {
            gateway: r.def.name.clone(),
            level,
            repeat,
            side,
            result,
        });
    }
    for p in &mut r.gw.procs {
        if let Some(st) = p.exited() {
            return Err(BenchError::Process {
                name: r.def.name.clone(),
                reason: format!("exited during the sweep ({st}); log:\n{}", p.log_tail(20)),
            });
        }
    }
    Ok(())
}

fn stop(r: &mut Ready<'_>, outcome: &mut GatewayOutcome) {
    for p in &mut r.gw.procs {
        p.stop();
    }
    outcome.status = "measured".into();
}

#[cfg(test)]
mod tests {
    use super::turns;

    #[test]
    fn each_repeat_starts_one_gateway_later() {
        assert_eq!(turns(3, 1), [0, 1, 2]);
        assert_eq!(turns(3, 2), [1, 2, 0]);
        assert_eq!(turns(3, 3), [2, 0, 1]);
        assert_eq!(turns(3, 4), [0, 1, 2]);
        assert_eq!(turns(1, 2), [0]);
        assert!(turns(0, 1).is_empty());
    }
}
