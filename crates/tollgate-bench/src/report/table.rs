//! The readable result table (Markdown, so it can be pasted into `bench/README.md`).

use super::summary::{Spread, SummaryRow};

/// Formats `median (min..max)` with `prec` decimals; the range is left out for one repeat.
fn spread(s: &Spread, prec: usize) -> String {
    if (s.max - s.min).abs() < f64::EPSILON {
        format!("{:.prec$}", s.median)
    } else {
        format!("{:.prec$} ({:.prec$}..{:.prec$})", s.median, s.min, s.max)
    }
}

fn med(s: &Option<Spread>, prec: usize) -> String {
    s.as_ref()
        .map(|s| format!("{:.prec$}", s.median))
        .unwrap_or_else(|| "-".into())
}

fn opt(s: &Option<Spread>, prec: usize) -> String {
    s.as_ref()
        .map(|s| spread(s, prec))
        .unwrap_or_else(|| "-".into())
}

/// Renders the rows as a Markdown table. Latencies in ms, RSS in MB; added
/// values and the RPS ratio show `median (min..max)` over repeats, other
/// columns the median. Scenario-specific columns appear only when present.
pub fn render(rows: &[SummaryRow]) -> String {
    let streaming = rows.iter().any(|r| r.added_ttft_p50_ms.is_some());
    let sessions = rows.iter().any(|r| r.added_session_p50_ms.is_some());
    let large = rows.iter().any(|r| r.gateway_tokens_per_s.is_some());
    let redis = rows.iter().any(|r| r.redis_commands_per_request.is_some());
    let mut head = vec![
        "gateway",
        "c",
        "direct p50",
        "direct p99",
        "direct RPS",
        "gw p50",
        "gw p99",
        "gw RPS",
        "added p50",
        "added p99",
        "RPS ratio",
        "CPU %",
        "CPU µs/req",
        "peak RSS MB",
        "errors d/g",
    ];
    if streaming {
        head.extend(["added TTFT p50", "added TTFT p99", "gw gap p99"]);
    }
    if sessions {
        head.push("added ms/session p50");
    }
    if large {
        head.extend(["gw tokens/s", "gw RPS/core"]);
    }
    if redis {
        head.extend(["Redis cmd/req", "Redis FCALL/req"]);
    }
    let mut out = String::new();
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(head.len())));
    for r in rows {
        let mut cells = vec![
            r.gateway.clone(),
            r.level.to_string(),
            format!("{:.2}", r.direct_p50_ms.median),
            format!("{:.2}", r.direct_p99_ms.median),
            format!("{:.0}", r.direct_rps.median),
            med(&r.gateway_p50_ms, 2),
            med(&r.gateway_p99_ms, 2),
            med(&r.gateway_rps, 0),
            opt(&r.added_p50_ms, 3),
            opt(&r.added_p99_ms, 3),
            opt(&r.rps_ratio, 3),
            med(&r.cpu_percent, 1),
            med(&r.cpu_us_per_request, 0),
            r.peak_rss_mb
                .map(|m| format!("{m:.1}"))
                .unwrap_or_else(|| "-".into()),
            format!("{}/{}", r.direct_errors, r.gateway_errors),
        ];
        if streaming {
            cells.extend([
                opt(&r.added_ttft_p50_ms, 3),
                opt(&r.added_ttft_p99_ms, 3),
                med(&r.gateway_gap_p99_ms, 3),
            ]);
        }
        if sessions {
            cells.push(opt(&r.added_session_p50_ms, 2));
        }
        if large {
            cells.extend([
                med(&r.gateway_tokens_per_s, 0),
                med(&r.gateway_rps_per_core, 1),
            ]);
        }
        if redis {
            cells.push(med(&r.redis_commands_per_request, 2));
            cells.push(med(&r.redis_fcalls_per_request, 3));
        }
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_spread_and_missing_gateway_columns() {
        let row = SummaryRow {
            gateway: "x".into(),
            level: 4,
            direct_p50_ms: Spread {
                median: 20.5,
                min: 20.0,
                max: 21.0,
            },
            added_p99_ms: Some(Spread {
                median: 0.25,
                min: 0.125,
                max: 0.5,
            }),
            ..Default::default()
        };
        let t = render(&[row]);
        let line = t.lines().nth(2).unwrap();
        assert!(line.starts_with("| x | 4 | 20.50 |"), "{line}");
        assert!(line.contains("| 0.250 (0.125..0.500) |"), "{line}");
        assert!(line.contains("| - |"), "{line}");
        assert_eq!(t.lines().count(), 3);
        assert!(!t.contains("TTFT"));
    }
}
