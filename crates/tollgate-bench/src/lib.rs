//! Tollgate's benchmark harness.
//!
//! - [`driver`]: closed-loop and open-loop load driver (one keep-alive HTTP/1.1
//!   connection per worker, HDR histograms in µs, warm-up excluded).
//! - [`workload`]: the scenarios and their request bodies.
//! - [`gateway`]: gateways under test as data (`bench/gateways/*.toml`).
//! - [`harness`]: the sweep (mock once, then per gateway: start, warm up,
//!   direct and gateway runs interleaved per level and repeat, stop).
//! - [`procstat`]: CPU% and RSS of a process tree from `/proc`.
//! - [`report`]: CSV, Markdown table, SVG plots and run metadata.

pub mod cli;
pub mod client;
pub mod driver;
pub mod endpoint;
pub mod error;
pub mod exchange;
pub mod gateway;
pub mod harness;
pub mod machine;
pub mod process;
pub mod procstat;
pub mod redis_stats;
pub mod report;
pub mod sse;
pub mod stats;
pub mod upstream;
pub mod workload;

pub use error::BenchError;
