//! Description of the machine a result was measured on (from `/proc`).

use serde::Serialize;

/// Machine facts recorded with every result.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// `MemTotal` from `/proc/meminfo`, MB (10^6 bytes).
    pub memory_mb: u64,
    /// Kernel release from `/proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// 1-minute load average at the start of the run (other work on the machine).
    pub loadavg_1m: f64,
}

impl Machine {
    /// Reads the current machine's facts; unknown values are empty or zero.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default(),
            memory_mb: crate::procstat::status_kb(&meminfo, "MemTotal").unwrap_or(0) * 1024
                / 1_000_000,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
            loadavg_1m: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .unwrap_or(0.0),
        }
    }

    /// One-line summary, e.g. `2 cores (AMD EPYC ...), 24105 MB, Linux 6.1`.
    pub fn summary(&self) -> String {
        format!(
            "{} cores ({}), {} MB RAM, Linux {}, load {:.2}",
            self.cores, self.cpu_model, self.memory_mb, self.kernel, self.loadavg_1m
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_cores_and_memory() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(m.memory_mb > 0);
        assert!(m.summary().contains("cores"));
    }
}
