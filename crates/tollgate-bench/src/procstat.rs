//! CPU time and resident memory of a process tree, read from Linux `/proc`.
//!
//! Sources (proc(5)): `/proc/<pid>/stat` fields 4 (ppid), 14–17 (utime, stime,
//! cutime, cstime, in clock ticks); `/proc/<pid>/status` lines `VmRSS` and
//! `VmHWM` (kB). A tree is the root plus every live descendant found by
//! walking the ppid links of all `/proc/<n>/stat` files.

use std::collections::HashMap;
use std::fs;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Interval between RSS samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// Parsed fields of `/proc/<pid>/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatLine {
    /// Parent pid.
    pub ppid: u32,
    /// utime + stime + cutime + cstime, clock ticks (cutime/cstime cover reaped children).
    pub cpu_ticks: u64,
}

/// Parses a `/proc/<pid>/stat` line; the command name (field 2) may contain
/// spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_stat(line: &str) -> Option<StatLine> {
    let rest = &line[line.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field n is f[n - 3].
    let num = |n: usize| f.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(StatLine {
        ppid: num(4)? as u32,
        cpu_ticks: num(14)? + num(15)? + num(16)? + num(17)?,
    })
}

/// Reads a `kB` line such as `VmRSS:   1234 kB` from `/proc/<pid>/status` text.
pub fn status_kb(status: &str, key: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        v.split_whitespace().next()?.parse().ok()
    })
}

/// `pid` and all of its live descendants.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut parent_of: HashMap<u32, u32> = HashMap::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(s) = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|l| parse_stat(&l))
            {
                parent_of.insert(pid, s.ppid);
            }
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| **pp == p)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    tree
}

/// One reading of a process tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeSample {
    /// Summed CPU ticks of the tree.
    pub cpu_ticks: u64,
    /// Summed `VmRSS` (kB).
    pub rss_kb: u64,
    /// Summed `VmHWM` (kB): per-process peaks since start, an upper bound.
    pub hwm_kb: u64,
    /// Number of processes in the tree.
    pub processes: u32,
}

/// Reads CPU ticks and memory of `root` and its descendants (vanished processes are skipped).
pub fn sample_tree(root: u32) -> TreeSample {
    let mut s = TreeSample::default();
    for pid in process_tree(root) {
        let Some(stat) = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|l| parse_stat(&l))
        else {
            continue;
        };
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        s.cpu_ticks += stat.cpu_ticks;
        s.rss_kb += status_kb(&status, "VmRSS").unwrap_or(0);
        s.hwm_kb += status_kb(&status, "VmHWM").unwrap_or(0);
        s.processes += 1;
    }
    s
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux when unknown).
pub fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Resource use of a process tree over a measurement window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ProcUsage {
    /// CPU time of the tree / wall time × 100 (200 = two cores busy).
    pub cpu_percent: f64,
    /// CPU seconds used in the window.
    pub cpu_seconds: f64,
    /// Largest summed `VmRSS` seen while sampling, MB (10^6 bytes).
    pub peak_rss_mb: f64,
    /// Summed `VmHWM` at the end, MB: includes start-up peaks.
    pub hwm_mb: f64,
    /// Largest number of processes seen in the tree.
    pub processes: u32,
}

/// [`sample_tree`] of every root, summed (the replicas of one gateway).
pub fn sample_roots(roots: &[u32]) -> TreeSample {
    let mut s = TreeSample::default();
    for &root in roots {
        let t = sample_tree(root);
        s.cpu_ticks += t.cpu_ticks;
        s.rss_kb += t.rss_kb;
        s.hwm_kb += t.hwm_kb;
        s.processes += t.processes;
    }
    s
}

/// Samples process trees (summed) on a background thread until [`ProcSampler::stop`].
pub struct ProcSampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<ProcUsage>,
}

impl ProcSampler {
    /// Starts sampling the trees of `roots` now, every [`SAMPLE_INTERVAL`]: CPU and RSS are
    /// their sums, so the peak RSS of two replicas is the peak of their summed RSS.
    pub fn start(roots: Vec<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let first = sample_roots(&roots);
            let mut peak_rss = first.rss_kb;
            let mut procs = first.processes;
            let mut last = first;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(SAMPLE_INTERVAL);
                let s = sample_roots(&roots);
                if s.processes > 0 {
                    peak_rss = peak_rss.max(s.rss_kb);
                    procs = procs.max(s.processes);
                    last = s;
                }
            }
            let wall = t0.elapsed().as_secs_f64();
            let end = sample_roots(&roots);
            let end = if end.processes > 0 { end } else { last };
            peak_rss = peak_rss.max(end.rss_kb);
            let cpu_seconds =
                end.cpu_ticks.saturating_sub(first.cpu_ticks) as f64 / ticks_per_second();
            ProcUsage {
                cpu_percent: if wall > 0.0 {
                    cpu_seconds / wall * 100.0
                } else {
                    0.0
                },
                cpu_seconds,
                peak_rss_mb: peak_rss as f64 * 1024.0 / 1e6,
                hwm_mb: end.hwm_kb as f64 * 1024.0 / 1e6,
                processes: procs,
            }
        });
        ProcSampler { stop, handle }
    }

    /// Stops sampling and returns the usage over the sampled interval.
    pub fn stop(self) -> ProcUsage {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_spaces_in_name() {
        let line = "1234 (my (odd) proc) S 77 1234 1234 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 4 0 100 1000000 300 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.ppid, 77);
        assert_eq!(s.cpu_ticks, 250 + 50 + 7 + 3);
    }

    #[test]
    fn reads_status_kb_lines() {
        let st = "Name:\tx\nVmHWM:\t   5120 kB\nVmRSS:\t   4096 kB\n";
        assert_eq!(status_kb(st, "VmRSS"), Some(4096));
        assert_eq!(status_kb(st, "VmHWM"), Some(5120));
        assert_eq!(status_kb(st, "VmSwap"), None);
    }

    #[test]
    fn own_process_tree_includes_a_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let tree = process_tree(me);
        assert_eq!(tree[0], me);
        assert!(tree.contains(&child.id()));
        let s = sample_tree(me);
        assert!(s.processes >= 2);
        assert!(s.rss_kb > 0 && s.hwm_kb >= s.rss_kb / 2);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn sampler_sees_cpu_of_busy_child() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let sampler = ProcSampler::start(vec![child.id()]);
        std::thread::sleep(Duration::from_millis(400));
        let u = sampler.stop();
        child.kill().ok();
        child.wait().unwrap();
        assert!(u.cpu_seconds > 0.0, "{u:?}");
        assert!(u.peak_rss_mb > 0.0);
        assert_eq!(u.processes, 1);
    }

    #[test]
    fn roots_are_summed() {
        let mut a = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let mut b = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let one = sample_roots(&[a.id()]);
        let two = sample_roots(&[a.id(), b.id()]);
        a.kill().ok();
        b.kill().ok();
        a.wait().unwrap();
        b.wait().unwrap();
        assert_eq!((one.processes, two.processes), (1, 2));
        assert!(two.rss_kb > one.rss_kb, "{one:?} {two:?}");
    }
}
