//! `tollgate-mock` binary: runs the mock upstream until SIGTERM/SIGINT.
//!
//! Prints exactly one line to stdout once listening: `tollgate-mock listening on http://ADDR`.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use tollgate_mock::{MockConfig, start};

/// Deterministic mock LLM upstream (OpenAI + Anthropic wire formats) for Tollgate tests.
#[derive(Debug, Parser)]
#[command(name = "tollgate-mock", version)]
struct Cli {
    /// Host or IP to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// TCP port (0 = ephemeral).
    #[arg(long, default_value_t = 8190)]
    port: u16,
    /// Fixed delay before answering every inference request, ms.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// Fixtures directory for replay (default: $TOLLGATE_SHARED_DIR/fixtures when set).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Do not record observations (benchmarks).
    #[arg(long)]
    no_record: bool,
    /// Maximum number of observations kept (oldest dropped).
    #[arg(long, default_value_t = 10_000)]
    max_records: usize,
    /// Require this API key (Bearer, x-api-key or api-key); otherwise 401 in the route's dialect.
    #[arg(long)]
    require_key: Option<String>,
    /// Content chunks per generated stream when `x-mock-chunks` is absent.
    #[arg(long, default_value_t = 8)]
    chunks: usize,
    /// Answer 400 when a request body carries a gateway-internal field (litellm_params, rpm, ...).
    #[arg(long)]
    reject_internal_fields: bool,
}

#[expect(
    clippy::print_stderr,
    reason = "the entry point reports a failed start on stderr"
)]
fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let fixtures = cli.fixtures.or_else(|| {
        std::env::var_os("TOLLGATE_SHARED_DIR").map(|d| PathBuf::from(d).join("fixtures"))
    });
    let config = MockConfig {
        host: cli.host,
        port: cli.port,
        delay_ms: cli.delay_ms,
        fixtures_dir: fixtures,
        record: !cli.no_record,
        max_records: cli.max_records,
        require_key: cli.require_key,
        default_chunks: cli.chunks,
        reject_internal_fields: cli.reject_internal_fields,
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("tollgate-mock: cannot start runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    rt.block_on(async move {
        let handle = match start(config).await {
            Ok(h) => h,
            Err(e) => {
                eprintln!("tollgate-mock: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "tollgate-mock listening on {}", handle.base_url());
            let _ = out.flush();
        }
        wait_for_signal().await;
        handle.shutdown().await;
        std::process::ExitCode::SUCCESS
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            _ => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
