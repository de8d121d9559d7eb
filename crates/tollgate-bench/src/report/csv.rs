//! CSV output: one row per run (`runs.csv`), one per gateway and level (`summary.csv`), and
//! one per gateway run and Redis command (`redis.csv`, when a gateway names its Redis).

use crate::harness::{Side, Sweep};

use super::summary::{Spread, SummaryRow};

/// Header of `runs.csv`. Latencies in µs, RSS in MB, CPU in % of one core.
pub const RUNS_HEADER: &str = "scenario,gateway,level,repeat,side,requests,errors,window_s,rps,\
p50_us,p90_us,p99_us,p999_us,max_us,mean_us,ttfb_p50_us,ttfb_p99_us,ttft_p50_us,ttft_p99_us,\
gap_p50_us,gap_p99_us,session_p50_us,session_p99_us,prompt_tokens,tokens_per_s,\
cpu_percent,cpu_seconds,peak_rss_mb,hwm_mb,first_error";

/// Quotes a CSV field when it contains a comma, quote or newline (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Header of `redis.csv`: Redis commands per completed request of each gateway run, by
/// command name, as `INFO commandstats` counts them (a command a Redis function runs counts
/// under its own name, beside the `fcall` that ran it).
pub const REDIS_HEADER: &str = "gateway,level,repeat,completed,command,per_request";

/// `redis.csv` text; `None` when no run read a Redis.
pub fn redis(sweep: &Sweep) -> Option<String> {
    let mut out = String::from(REDIS_HEADER);
    out.push('\n');
    let mut any = false;
    for r in &sweep.runs {
        let Some(u) = &r.result.redis else { continue };
        any = true;
        for (cmd, n) in &u.by_command {
            out.push_str(&format!(
                "{},{},{},{},{},{n:.4}\n",
                field(&r.gateway),
                r.level,
                r.repeat,
                r.result.completed,
                field(cmd)
            ));
        }
    }
    any.then_some(out)
}

/// `runs.csv` text.
pub fn runs(sweep: &Sweep) -> String {
    let mut out = String::from(RUNS_HEADER);
    out.push('\n');
    for r in &sweep.runs {
        let x = &r.result;
        let p = x.process.unwrap_or_default();
        let cols: Vec<String> = vec![
            sweep.scenario.name().into(),
            field(&r.gateway),
            r.level.to_string(),
            r.repeat.to_string(),
            match r.side {
                Side::Direct => "direct".into(),
                Side::Gateway => "gateway".into(),
            },
            x.requests.to_string(),
            x.errors.to_string(),
            format!("{:.3}", x.window_s),
            format!("{:.2}", x.rps),
            x.latency.p50.to_string(),
            x.latency.p90.to_string(),
            x.latency.p99.to_string(),
            x.latency.p999.to_string(),
            x.latency.max.to_string(),
            format!("{:.1}", x.latency.mean),
            x.ttfb.p50.to_string(),
            x.ttfb.p99.to_string(),
            x.ttft.p50.to_string(),
            x.ttft.p99.to_string(),
            x.event_gap.p50.to_string(),
            x.event_gap.p99.to_string(),
            x.session.p50.to_string(),
            x.session.p99.to_string(),
            x.prompt_tokens.to_string(),
            format!("{:.1}", x.tokens_per_s()),
            if x.process.is_some() {
                format!("{:.2}", p.cpu_percent)
            } else {
                String::new()
            },
            if x.process.is_some() {
                format!("{:.4}", p.cpu_seconds)
            } else {
                String::new()
            },
            if x.process.is_some() {
                format!("{:.2}", p.peak_rss_mb)
            } else {
                String::new()
            },
            if x.process.is_some() {
                format!("{:.2}", p.hwm_mb)
            } else {
                String::new()
            },
            field(x.first_error.as_deref().unwrap_or("")),
        ];
        out.push_str(&cols.join(","));
        out.push('\n');
    }
    out
}

/// Header of `summary.csv`: medians over repeats plus min/max of the added latencies.
pub const SUMMARY_HEADER: &str = "gateway,level,repeats,direct_p50_ms,direct_p99_ms,direct_rps,\
gateway_p50_ms,gateway_p99_ms,gateway_rps,added_p50_ms,added_p50_min_ms,added_p50_max_ms,\
added_p99_ms,added_p99_min_ms,added_p99_max_ms,rps_ratio,rps_ratio_min,rps_ratio_max,cpu_percent,\
cpu_us_per_request,peak_rss_mb,direct_errors,gateway_errors,redis_commands_per_request,\
redis_fcalls_per_request";

fn m(s: &Option<Spread>) -> String {
    s.map(|s| format!("{:.4}", s.median)).unwrap_or_default()
}

fn range(s: &Option<Spread>) -> [String; 3] {
    match s {
        Some(s) => [
            format!("{:.4}", s.median),
            format!("{:.4}", s.min),
            format!("{:.4}", s.max),
        ],
        None => Default::default(),
    }
}

/// `summary.csv` text.
pub fn summary(rows: &[SummaryRow]) -> String {
    let mut out = String::from(SUMMARY_HEADER);
    out.push('\n');
    for r in rows {
        let mut cols = vec![
            field(&r.gateway),
            r.level.to_string(),
            r.repeats.to_string(),
            format!("{:.4}", r.direct_p50_ms.median),
            format!("{:.4}", r.direct_p99_ms.median),
            format!("{:.2}", r.direct_rps.median),
            m(&r.gateway_p50_ms),
            m(&r.gateway_p99_ms),
            r.gateway_rps
                .map(|s| format!("{:.2}", s.median))
                .unwrap_or_default(),
        ];
        cols.extend(range(&r.added_p50_ms));
        cols.extend(range(&r.added_p99_ms));
        cols.extend(range(&r.rps_ratio));
        cols.push(m(&r.cpu_percent));
        cols.push(m(&r.cpu_us_per_request));
        cols.push(r.peak_rss_mb.map(|v| format!("{v:.2}")).unwrap_or_default());
        cols.push(r.direct_errors.to_string());
        cols.push(r.gateway_errors.to_string());
        cols.push(m(&r.redis_commands_per_request));
        cols.push(m(&r.redis_fcalls_per_request));
        out.push_str(&cols.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_fields_that_need_it() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn headers_match_column_counts() {
        let rows = vec![SummaryRow::default()];
        let s = summary(&rows);
        let mut lines = s.lines();
        let h = lines.next().unwrap().split(',').count();
        assert_eq!(lines.next().unwrap().split(',').count(), h);
    }
}
