//! Aggregation of repeated runs into one row per gateway and level.
//!
//! Added latency is computed per repeat (gateway pX − direct pX of the same
//! repeat) and then summarised as median and range over repeats.

use serde::Serialize;

use crate::harness::{RunRecord, Side, Sweep};
use crate::stats::{median, min_max};

/// Median and range of one quantity over repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Spread {
    /// Median over repeats.
    pub median: f64,
    /// Smallest repeat.
    pub min: f64,
    /// Largest repeat.
    pub max: f64,
}

impl Spread {
    /// Median and range of `v` (all zero when empty).
    pub fn of(v: &[f64]) -> Self {
        let (min, max) = min_max(v);
        Spread {
            median: median(v),
            min,
            max,
        }
    }
}

/// One table row: a gateway at one concurrency level. Times in ms.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SummaryRow {
    /// Gateway name ([`crate::harness::DIRECT_ONLY`] for direct-only sweeps).
    pub gateway: String,
    /// Concurrency level.
    pub level: usize,
    /// Number of repeats aggregated.
    pub repeats: usize,
    /// Direct p50 latency (ms).
    pub direct_p50_ms: Spread,
    /// Direct p99 latency (ms).
    pub direct_p99_ms: Spread,
    /// Direct throughput (requests/s).
    pub direct_rps: Spread,
    /// Gateway p50 latency (ms); `None` in direct-only rows.
    pub gateway_p50_ms: Option<Spread>,
    /// Gateway p99 latency (ms).
    pub gateway_p99_ms: Option<Spread>,
    /// Gateway throughput (requests/s).
    pub gateway_rps: Option<Spread>,
    /// Gateway p50 − direct p50, per repeat (ms).
    pub added_p50_ms: Option<Spread>,
    /// Gateway p99 − direct p99, per repeat (ms).
    pub added_p99_ms: Option<Spread>,
    /// Gateway RPS / direct RPS, per repeat.
    pub rps_ratio: Option<Spread>,
    /// Gateway process-tree CPU % (100 = one core) during the window.
    pub cpu_percent: Option<Spread>,
    /// Gateway CPU time per successful request (µs).
    pub cpu_us_per_request: Option<Spread>,
    /// Largest sampled RSS of the gateway tree over repeats (MB).
    pub peak_rss_mb: Option<f64>,
    /// Errors summed over repeats: direct side.
    pub direct_errors: u64,
    /// Errors summed over repeats: gateway side.
    pub gateway_errors: u64,
    /// Streaming: added time to first token p50 / p99 (ms).
    pub added_ttft_p50_ms: Option<Spread>,
    /// Streaming: added time to first token p99 (ms).
    pub added_ttft_p99_ms: Option<Spread>,
    /// Streaming: gateway inter-event gap p99 (ms).
    pub gateway_gap_p99_ms: Option<Spread>,
    /// Agentic: added wall time per 30-turn session, p50 (ms).
    pub added_session_p50_ms: Option<Spread>,
    /// Large prompts: gateway prompt tokens per second.
    pub gateway_tokens_per_s: Option<Spread>,
    /// Large prompts: gateway RPS divided by the machine's cores.
    pub gateway_rps_per_core: Option<Spread>,
    /// Gateway RPS divided by the cores the gateway actually used (CPU% / 100).
    pub gateway_rps_per_busy_core: Option<Spread>,
    /// Redis commands per request read from the Redis server (`INFO commandstats`), when the
    /// gateway definition names its Redis.
    pub redis_commands_per_request: Option<Spread>,
    /// Of those, `FCALL`s per request: the calls of Redis functions, each one round trip
    /// (commands the functions run inside Redis are in the total, not here).
    pub redis_fcalls_per_request: Option<Spread>,
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Builds one row per (gateway, level), in sweep order.
pub fn summarise(sweep: &Sweep) -> Vec<SummaryRow> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in &sweep.runs {
        let k = (r.gateway.clone(), r.level);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let cores = sweep.machine.cores.max(1) as f64;
    keys.into_iter()
        .map(|(gateway, level)| {
            let of = |side: Side| -> Vec<&RunRecord> {
                let mut v: Vec<&RunRecord> = sweep
                    .runs
                    .iter()
                    .filter(|r| r.gateway == gateway && r.level == level && r.side == side)
                    .collect();
                v.sort_by_key(|r| r.repeat);
                v
            };
            let d = of(Side::Direct);
            let g = of(Side::Gateway);
            let col = |runs: &[&RunRecord], f: &dyn Fn(&RunRecord) -> f64| -> Spread {
                Spread::of(&runs.iter().map(|r| f(r)).collect::<Vec<_>>())
            };
            // Per-repeat pairs (same repeat number on both sides).
            let pairs: Vec<(&RunRecord, &RunRecord)> = g
                .iter()
                .filter_map(|gr| {
                    d.iter()
                        .find(|dr| dr.repeat == gr.repeat)
                        .map(|dr| (*dr, *gr))
                })
                .collect();
            let diff = |f: &dyn Fn(&RunRecord) -> f64| -> Option<Spread> {
                (!pairs.is_empty()).then(|| {
                    Spread::of(&pairs.iter().map(|(a, b)| f(b) - f(a)).collect::<Vec<_>>())
                })
            };
            let gcol = |f: &dyn Fn(&RunRecord) -> f64| (!g.is_empty()).then(|| col(&g, f));
            let streaming = g.iter().any(|r| r.result.ttft.count > 0);
            let sessions = g.iter().any(|r| r.result.session.count > 0);
            let large = matches!(
                sweep.scenario,
                crate::workload::Scenario::LargePrompts | crate::workload::Scenario::HighThroughput
            );
            let redis: Vec<f64> = g
                .iter()
                .filter_map(|r| r.result.redis.as_ref().map(|u| u.commands_per_request))
                .collect();
            let fcalls: Vec<f64> = g
                .iter()
                .filter_map(|r| {
                    let u = r.result.redis.as_ref()?;
                    Some(u.by_command.get("fcall").copied().unwrap_or(0.0))
                })
                .collect();
            SummaryRow {
                repeats: d.len().max(g.len()),
                direct_p50_ms: col(&d, &|r| ms(r.result.latency.p50)),
                direct_p99_ms: col(&d, &|r| ms(r.result.latency.p99)),
                direct_rps: col(&d, &|r| r.result.rps),
                gateway_p50_ms: gcol(&|r| ms(r.result.latency.p50)),
                gateway_p99_ms: gcol(&|r| ms(r.result.latency.p99)),
                gateway_rps: gcol(&|r| r.result.rps),
                added_p50_ms: diff(&|r| ms(r.result.latency.p50)),
                added_p99_ms: diff(&|r| ms(r.result.latency.p99)),
                rps_ratio: (!pairs.is_empty()).then(|| {
                    Spread::of(
                        &pairs
                            .iter()
                            .map(|(a, b)| {
                                if a.result.rps > 0.0 {
                                    b.result.rps / a.result.rps
                                } else {
                                    0.0
                                }
                            })
                            .collect::<Vec<_>>(),
                    )
                }),
                cpu_percent: gcol(&|r| r.result.process.map(|p| p.cpu_percent).unwrap_or(0.0)),
                cpu_us_per_request: gcol(&|r| {
                    let cpu = r.result.process.map(|p| p.cpu_seconds).unwrap_or(0.0);
                    if r.result.requests > 0 {
                        cpu * 1e6 / r.result.requests as f64
                    } else {
                        0.0
                    }
                }),
                peak_rss_mb: (!g.is_empty()).then(|| {
                    g.iter()
                        .filter_map(|r| r.result.process.map(|p| p.peak_rss_mb))
                        .fold(0.0, f64::max)
                }),
                direct_errors: d.iter().map(|r| r.result.errors).sum(),
                gateway_errors: g.iter().map(|r| r.result.errors).sum(),
                added_ttft_p50_ms: if streaming {
                    diff(&|r| ms(r.result.ttft.p50))
                } else {
                    None
                },
                added_ttft_p99_ms: if streaming {
                    diff(&|r| ms(r.result.ttft.p99))
                } else {
                    None
                },
                gateway_gap_p99_ms: if streaming {
                    gcol(&|r| ms(r.result.event_gap.p99))
                } else {
                    None
                },
                added_session_p50_ms: if sessions {
                    diff(&|r| ms(r.result.session.p50))
                } else {
                    None
                },
                gateway_tokens_per_s: if large {
                    gcol(&|r| r.result.tokens_per_s())
                } else {
                    None
                },
                gateway_rps_per_core: if large {
                    gcol(&|r| r.result.rps / cores)
                } else {
                    None
                },
                gateway_rps_per_busy_core: gcol(&|r| {
                    let busy = r
                        .result
                        .process
                        .map(|p| p.cpu_percent / 100.0)
                        .unwrap_or(0.0);
                    if busy > 0.0 { r.result.rps / busy } else { 0.0 }
                }),
                redis_commands_per_request: (!redis.is_empty()).then(|| Spread::of(&redis)),
                redis_fcalls_per_request: (!fcalls.is_empty()).then(|| Spread::of(&fcalls)),
                gateway,
                level,
            }
        })
        .collect()
}
