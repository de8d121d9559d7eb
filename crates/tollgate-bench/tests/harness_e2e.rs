//! Runs the whole harness for about a second and checks the files it writes.
//! Direct runs go to an in-process upstream; the Tollgate gateway joins when
//! its binary has been built (target/release or target/debug), else it is
//! reported as skipped. Timings are never asserted, only their consistency.

mod support;

use std::path::Path;
use std::time::Duration;

use tollgate_bench::driver::Mode;
use tollgate_bench::gateway::GatewayDef;
use tollgate_bench::harness::{self, DIRECT_ONLY, HarnessConfig};
use tollgate_bench::report::{self, Meta};
use tollgate_bench::upstream::Upstream;
use tollgate_bench::workload::Scenario;

/// The repository's `bench/` directory and the repository root.
#[expect(
    clippy::unwrap_used,
    reason = "test setup: a missing bench/ fails the test"
)]
fn dirs() -> (std::path::PathBuf, std::path::PathBuf) {
    let bench_dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench")
        .canonicalize()
        .unwrap();
    let repo_dir = bench_dir.parent().unwrap().to_path_buf();
    (bench_dir, repo_dir)
}

/// Whether a `tollgate` binary has been built in the repository's target directory.
fn tollgate_built(repo_dir: &Path) -> bool {
    ["release", "debug"]
        .iter()
        .any(|p| repo_dir.join("target").join(p).join("tollgate").is_file())
}

/// A forwarding sweep of `gateways` against `upstream` at `levels` × `repeats`, short windows,
/// one gateway after the other, scratch files under `work`.
fn short_sweep(
    gateways: Vec<GatewayDef>,
    upstream: String,
    levels: Vec<usize>,
    repeats: usize,
    work: &Path,
) -> HarnessConfig {
    let (bench_dir, repo_dir) = dirs();
    HarnessConfig {
        bench_dir,
        repo_dir,
        gateways,
        upstream: Upstream::Existing(upstream),
        scenario: Scenario::Forwarding,
        levels,
        repeats,
        warmup: Duration::from_millis(30),
        gateway_warmup: Duration::from_millis(100),
        duration: Duration::from_millis(200),
        max_requests: 100_000,
        mode: Mode::Closed,
        request_timeout: Duration::from_secs(5),
        direct_headers: vec![("authorization".into(), "Bearer sk-bench-upstream".into())],
        openai_model: "bench-gpt".into(),
        anthropic_model: "bench-claude".into(),
        work_dir: work.join("scratch"),
        interleave: false,
    }
}

#[test]
fn sweep_writes_consistent_csv_table_and_plots() {
    let (upstream, seen) = support::start_on_thread(Duration::from_millis(2));
    let (bench_dir, repo_dir) = dirs();
    let tollgate_built = tollgate_built(&repo_dir);
    let mut gateways = Vec::new();
    if tollgate_built {
        let p = bench_dir.join("gateways/tollgate.toml");
        gateways.push(GatewayDef::parse(&std::fs::read_to_string(&p).unwrap(), &p).unwrap());
    } else {
        println!("tollgate binary not built: gateway part skipped, direct only");
    }
    let work = std::env::temp_dir().join(format!("tgb-e2e-{}", std::process::id()));
    let cfg = HarnessConfig {
        gateway_warmup: Duration::from_millis(200),
        ..short_sweep(gateways, upstream, vec![1, 4], 2, &work)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sweep = rt.block_on(harness::run(&cfg)).unwrap();
    let rows = report::summarise(&sweep);
    let measured: Vec<&str> = sweep
        .gateways
        .iter()
        .filter(|g| g.status == "measured")
        .map(|g| g.name.as_str())
        .collect();
    println!(
        "gateways: {:?}",
        sweep
            .gateways
            .iter()
            .map(|g| (&g.name, &g.status, &g.detail))
            .collect::<Vec<_>>()
    );
    let meta = Meta {
        scenario: "forwarding",
        machine: &sweep.machine,
        commit: None,
        command: "test".into(),
        gateways: &sweep.gateways,
        upstream: &sweep.upstream,
        started: "test".into(),
    };
    let out = work.join("results");
    let files = report::write_all(&out, &sweep, &rows, &meta).unwrap();
    assert!(files.iter().any(|f| f.ends_with("rps.svg")));

    // runs.csv: one row per level × repeat × side.
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let mut lines = runs.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows_csv: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let sides_per_level = if measured.is_empty() {
        1
    } else {
        2 * measured.len()
    };
    assert_eq!(rows_csv.len(), 2 * 2 * sides_per_level, "{runs}");
    for r in &rows_csv {
        assert_eq!(r.len(), header.len());
        let num = |c: &str| r[col(c)].parse::<f64>().unwrap();
        assert!(num("rps") > 0.0, "{r:?}");
        assert!(num("requests") > 0.0);
        assert_eq!(num("errors"), 0.0, "{r:?}");
        assert!(num("p99_us") >= num("p50_us"), "{r:?}");
        assert!(num("max_us") >= num("p99_us"));
        // Latency includes the mock's 2 ms delay.
        assert!(num("p50_us") >= 2000.0, "{r:?}");
        if r[col("side")] == "gateway" {
            assert!(num("peak_rss_mb") > 0.0);
        }
    }
    let levels: Vec<&str> = rows_csv.iter().map(|r| r[col("level")].as_str()).collect();
    assert_eq!(
        levels.iter().filter(|l| **l == "1").count(),
        2 * sides_per_level
    );
    assert!(seen.chat.load(std::sync::atomic::Ordering::Relaxed) > 0);

    // Summary and table: one row per gateway and level.
    let expected_rows = if measured.is_empty() {
        2
    } else {
        2 * measured.len()
    };
    assert_eq!(rows.len(), expected_rows);
    let table = std::fs::read_to_string(out.join("table.md")).unwrap();
    let name = measured.first().copied().unwrap_or(DIRECT_ONLY);
    assert!(table.contains(&format!("| {name} | 1 |")), "{table}");
    assert!(table.contains(&format!("| {name} | 4 |")), "{table}");
    for r in &rows {
        assert!(r.direct_rps.median > 0.0);
        assert!(r.direct_p99_ms.median >= r.direct_p50_ms.median);
        assert_eq!(r.repeats, 2);
    }
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 1 + expected_rows);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert!(meta["machine"]["cores"].as_u64().unwrap() >= 1);
    std::fs::remove_dir_all(&work).ok();
}

/// A definition with `replicas = 2` starts two processes, spreads the load over both and sums
/// their CPU and memory. Needs the `tollgate` binary (skipped, saying so, without it).
#[test]
fn two_replicas_share_the_load_and_are_sampled_together() {
    let (upstream, seen) = support::start_on_thread(Duration::from_millis(2));
    let (bench_dir, repo_dir) = dirs();
    if !tollgate_built(&repo_dir) {
        println!("tollgate binary not built: two-replica harness test skipped");
        return;
    }
    let p = bench_dir.join("gateways/tollgate.toml");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "name = \"tollgate\"",
        "name = \"tollgate-pair\"\nreplicas = 2",
    );
    let def = GatewayDef::parse(&text, &p).unwrap();
    assert_eq!(def.replicas, 2);
    let work = std::env::temp_dir().join(format!("tgb-pair-{}", std::process::id()));
    let cfg = HarnessConfig {
        duration: Duration::from_millis(300),
        ..short_sweep(vec![def], upstream, vec![4], 1, &work)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sweep = rt.block_on(harness::run(&cfg)).unwrap();
    assert_eq!(sweep.gateways[0].status, "measured", "{:?}", sweep.gateways);
    let gw = sweep
        .runs
        .iter()
        .find(|r| r.side == tollgate_bench::harness::Side::Gateway)
        .unwrap();
    let proc_ = gw.result.process.unwrap();
    assert_eq!(proc_.processes, 2, "both replicas sampled: {proc_:?}");
    assert!(
        gw.result.requests > 0 && gw.result.errors == 0,
        "{:?}",
        gw.result
    );
    // Each replica wrote its own log: both served (started, answered the probe).
    let scratch = work.join("scratch").join("tollgate-pair");
    assert!(scratch.join("tollgate-pair-0.log").is_file());
    assert!(scratch.join("tollgate-pair-1.log").is_file());
    assert!(seen.chat.load(std::sync::atomic::Ordering::Relaxed) >= gw.result.requests);
    std::fs::remove_dir_all(&work).ok();
}

/// `interleave`: both gateways are started first and measured in turn, the turn starting one
/// gateway later at each repeat; every gateway run still has its direct run beside it. Needs
/// the `tollgate` binary (skipped, saying so, without it).
#[test]
fn interleaved_gateways_take_turns_rotated_per_repeat() {
    let (upstream, _seen) = support::start_on_thread(Duration::from_millis(2));
    let (bench_dir, repo_dir) = dirs();
    if !tollgate_built(&repo_dir) {
        println!("tollgate binary not built: interleaved harness test skipped");
        return;
    }
    let p = bench_dir.join("gateways/tollgate.toml");
    let text = std::fs::read_to_string(&p).unwrap();
    let def = |name: &str| {
        let t = text.replace("name = \"tollgate\"", &format!("name = \"{name}\""));
        GatewayDef::parse(&t, &p).unwrap()
    };
    let work = std::env::temp_dir().join(format!("tgb-turns-{}", std::process::id()));
    let cfg = HarnessConfig {
        warmup: Duration::from_millis(20),
        duration: Duration::from_millis(150),
        interleave: true,
        ..short_sweep(vec![def("tg-a"), def("tg-b")], upstream, vec![2], 3, &work)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sweep = rt.block_on(harness::run(&cfg)).unwrap();
    let status: Vec<(&str, &str)> = sweep
        .gateways
        .iter()
        .map(|g| (g.name.as_str(), g.status.as_str()))
        .collect();
    assert_eq!(status, [("tg-a", "measured"), ("tg-b", "measured")]);
    let order: Vec<(usize, &str, tollgate_bench::harness::Side)> = sweep
        .runs
        .iter()
        .map(|r| (r.repeat, r.gateway.as_str(), r.side))
        .collect();
    use tollgate_bench::harness::Side::{Direct, Gateway};
    assert_eq!(
        order,
        [
            (1, "tg-a", Direct),
            (1, "tg-a", Gateway),
            (1, "tg-b", Direct),
            (1, "tg-b", Gateway),
            (2, "tg-b", Gateway),
            (2, "tg-b", Direct),
            (2, "tg-a", Gateway),
            (2, "tg-a", Direct),
            (3, "tg-a", Direct),
            (3, "tg-a", Gateway),
            (3, "tg-b", Direct),
            (3, "tg-b", Gateway),
        ]
    );
    assert!(
        sweep
            .runs
            .iter()
            .all(|r| r.result.requests > 0 && r.result.errors == 0)
    );
    std::fs::remove_dir_all(&work).ok();
}
