//! Command-line interface of the `tollgate-bench` binary.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::driver::Mode;
use crate::workload::Scenario;

/// Load driver and side-by-side gateway benchmark.
#[derive(Debug, Parser)]
#[command(name = "tollgate-bench", version)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
    /// Tokio worker threads of the driver (1 keeps the driver off the gateway's core on small machines).
    #[arg(long, global = true, default_value_t = 1)]
    pub driver_threads: usize,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the mock, then measure each gateway against the direct baseline.
    Sweep(SweepArgs),
    /// One driver run against any URL (no processes started).
    Load(LoadArgs),
}

/// Options shared by `sweep` and `load`.
#[derive(Debug, Args, Clone)]
pub struct Common {
    /// Scenario: forwarding, governed, streaming, anthropic, large-prompts, agentic, high-throughput.
    #[arg(long, default_value = "forwarding")]
    pub scenario: Scenario,
    /// Measurement window per run, seconds.
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Warm-up before each run, seconds (not counted).
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// The window closes after this many counted requests.
    #[arg(long, default_value_t = 2_000_000)]
    pub max_requests: u64,
    /// Open loop: total requests per second (latency from intended send time).
    /// Without it the driver runs closed-loop.
    #[arg(long)]
    pub rate: Option<f64>,
    /// Per-request timeout, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub request_timeout: f64,
    /// Model name in OpenAI bodies.
    #[arg(long, default_value = "bench-gpt")]
    pub model: String,
    /// Model name in Anthropic bodies.
    #[arg(long, default_value = "bench-claude")]
    pub anthropic_model: String,
}

impl Common {
    /// Closed or open loop.
    pub fn mode(&self) -> Mode {
        match self.rate {
            Some(rate) => Mode::Open { rate },
            None => Mode::Closed,
        }
    }
}

/// `sweep` options.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Gateways to measure (names from bench/gateways/*.toml); default all.
    #[arg(long, value_delimiter = ',')]
    pub gateways: Vec<String>,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    pub levels: Vec<usize>,
    /// Repeats per level.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Warm-up after a gateway became healthy, seconds.
    #[arg(long, default_value_t = 2.0)]
    pub gateway_warmup: f64,
    /// Start every gateway first and measure them in turn at each level and repeat (the turn
    /// rotated per repeat), so the machine's drift over the sweep reaches all alike.
    #[arg(long)]
    pub interleave: bool,
    /// The bench/ directory (gateways/, configs/, results/); default: found from the current directory.
    #[arg(long)]
    pub bench_dir: Option<PathBuf>,
    /// Use an already running upstream instead of starting tollgate-mock.
    #[arg(long)]
    pub upstream: Option<String>,
    /// tollgate-mock binary (default: env TOLLGATE_MOCK_BIN, target/release, target/debug, PATH).
    #[arg(long)]
    pub mock_bin: Option<PathBuf>,
    /// Fixed delay of the mock, ms.
    #[arg(long, default_value_t = 20)]
    pub mock_delay_ms: u64,
    /// Where result files go (default bench/results/<UTC timestamp>-<scenario>).
    #[arg(long)]
    pub results_dir: Option<PathBuf>,
    /// Print the table only; write no files.
    #[arg(long)]
    pub no_write: bool,
}

/// `load` options.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Shared options.
    #[command(flatten)]
    pub common: Common,
    /// Base URL, e.g. http://127.0.0.1:4000.
    #[arg(long)]
    pub url: String,
    /// Workers (connections).
    #[arg(short, long, default_value_t = 16)]
    pub concurrency: usize,
    /// Header `name: value`, repeatable (e.g. "authorization: Bearer sk-...").
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Process id whose tree's CPU and RSS are sampled.
    #[arg(long)]
    pub pid: Option<u32>,
}

/// Seconds as a `Duration` (negative or non-finite values become zero).
pub fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::ZERO)
}

/// Splits `name: value` header arguments.
pub fn parse_headers(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|h| {
            h.split_once(':')
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| format!("header {h:?} is not `name: value`"))
        })
        .collect()
}

/// The `bench/` directory: `bench/gateways` under the current directory or an
/// ancestor, else the one beside this crate's source.
pub fn find_bench_dir() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("bench/gateways").is_dir() {
                return dir.join("bench");
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

/// Date-time `YYYYMMDD-HHMMSS` (UTC) of a Unix time in seconds.
pub fn utc_stamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    // Civil-from-days, Howard Hinnant's algorithm (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_known_dates() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_795_980_504), "20261129-192824");
    }

    #[test]
    fn parses_headers() {
        let h = parse_headers(&["Authorization: Bearer x:y".into()]).unwrap();
        assert_eq!(h, vec![("authorization".into(), "Bearer x:y".into())]);
        assert!(parse_headers(&["nocolon".into()]).is_err());
    }

    #[test]
    fn parses_sweep_command_line() {
        let cli = Cli::try_parse_from([
            "tollgate-bench",
            "sweep",
            "--scenario",
            "large-prompts",
            "--levels",
            "1,8",
            "--rate",
            "100",
            "--gateways",
            "nginx,tollgate",
        ])
        .unwrap();
        let Command::Sweep(s) = cli.command else {
            panic!()
        };
        assert_eq!(s.common.scenario, Scenario::LargePrompts);
        assert_eq!(s.levels, vec![1, 8]);
        assert_eq!(s.gateways, vec!["nginx", "tollgate"]);
        assert_eq!(s.common.mode(), Mode::Open { rate: 100.0 });
        assert_eq!(s.repeats, 3);
    }
}
