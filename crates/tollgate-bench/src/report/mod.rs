//! Result files: `runs.csv`, `summary.csv`, `table.md`, `meta.json`, SVG plots.

pub mod csv;
pub mod plot;
pub mod summary;
pub mod table;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::BenchError;
use crate::harness::{GatewayOutcome, Sweep};
use crate::machine::Machine;

pub use summary::{Spread, SummaryRow, summarise};

/// Gateways whose added p99 stays within ± this many ms also get a zoomed plot.
pub const ZOOM_LIMIT_MS: f64 = 50.0;

/// Context recorded in `meta.json` next to the numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Meta<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Machine facts.
    pub machine: &'a Machine,
    /// `git describe`-like commit of the repository (with `-dirty`), if known.
    pub commit: Option<String>,
    /// The command line that produced the results.
    pub command: String,
    /// Per-gateway outcome, version and rendered config.
    pub gateways: &'a [GatewayOutcome],
    /// Upstream URL (the mock).
    pub upstream: &'a str,
    /// Start time, RFC 3339.
    pub started: String,
}

/// Everything the harness prints: status lines of gateways not measured, then the table.
pub fn text_report(sweep: &Sweep, rows: &[SummaryRow]) -> String {
    let mut out = format!(
        "scenario: {}  machine: {}\n",
        sweep.scenario,
        sweep.machine.summary()
    );
    for g in &sweep.gateways {
        let v = g.version.as_deref().unwrap_or("version unknown");
        if g.status == "measured" {
            out.push_str(&format!("- {}: measured ({v})\n", g.name));
        } else {
            out.push_str(&format!(
                "- {}: {}: {}\n",
                g.name,
                g.status,
                first_line(&g.detail)
            ));
        }
    }
    out.push('\n');
    out.push_str(&table::render(rows));
    out
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// Writes all result files into `dir` (created if missing) and returns the paths written.
///
/// Errors: [`BenchError::Io`] / [`BenchError::Report`] when a file cannot be written.
pub fn write_all(
    dir: &Path,
    sweep: &Sweep,
    rows: &[SummaryRow],
    meta: &Meta<'_>,
) -> Result<Vec<PathBuf>, BenchError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| BenchError::io(format!("create {}", dir.display()), e))?;
    let mut written = Vec::new();
    let mut put = |name: &str, text: String| -> Result<(), BenchError> {
        let p = dir.join(name);
        std::fs::write(&p, text)
            .map_err(|e| BenchError::io(format!("write {}", p.display()), e))?;
        written.push(p);
        Ok(())
    };
    put("runs.csv", csv::runs(sweep))?;
    put("summary.csv", csv::summary(rows))?;
    put("table.md", text_report(sweep, rows))?;
    if let Some(text) = csv::redis(sweep) {
        put("redis.csv", text)?;
    }
    put(
        "meta.json",
        serde_json::to_string_pretty(meta).map_err(|e| BenchError::Report(e.to_string()))?,
    )?;
    let added = plot::added_p99_lines(rows);
    if !added.is_empty() {
        let p = dir.join("added_p99.svg");
        plot::draw(
            &p,
            &format!("{}: added p99 latency vs concurrency", sweep.scenario),
            "gateway p99 - direct p99 (ms)",
            &added,
        )?;
        written.push(p);
        let fast = plot::within(&added, ZOOM_LIMIT_MS);
        if !fast.is_empty() && fast.len() < added.len() {
            let p = dir.join("added_p99_zoom.svg");
            plot::draw(
                &p,
                &format!(
                    "{}: added p99, gateways within ±{ZOOM_LIMIT_MS} ms",
                    sweep.scenario
                ),
                "gateway p99 - direct p99 (ms)",
                &fast,
            )?;
            written.push(p);
        }
    }
    let p = dir.join("rps.svg");
    plot::draw(
        &p,
        &format!("{}: throughput vs concurrency", sweep.scenario),
        "requests per second",
        &plot::rps_lines(rows),
    )?;
    written.push(p);
    Ok(written)
}
