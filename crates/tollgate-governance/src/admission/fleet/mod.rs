//! Counters shared by a fleet on Redis, as the engine uses them: [`BatchedRedis`], the
//! [`SharedCounters`](super::SharedCounters) that waits on Redis once per request (the
//! reservation) and sends everything after the call in batches shared by many requests, and
//! what it does when Redis fails ([`FailurePolicy`](super::redis::FailurePolicy)).
//!
//! | file | job |
//! |---|---|
//! | `batched.rs` | [`BatchedRedis`]: reserve (Redis, reseed, fallback), queue settle/release, flush |
//! | `queue.rs` | the bounded queue between requests and the batcher |
//! | `batcher.rs` | the task that sends queued operations, one round trip per batch, retrying |
//! | `fallback.rs` | local counters (limits divided by the replicas) while Redis fails |
//! | `health.rs` | the back-off after a failure |
//! | `reseed.rs` | [`ReseedSource`], [`Seed`]: seeding a Redis that lost its data, once per fleet |
//! | `counts.rs` | [`RoundTrips`]: round trips before/after the call, ops, batches, drops |
//!
//! Round trips per request at load: 1 before the call (the reservation; it also returns each
//! scope's spend for the response headers and checks the fleet marker), and `1 / batch size`
//! after it; at 64 concurrent settlements one batch carries them all (the tests show it).

mod batched;
mod batcher;
mod counts;
mod fallback;
mod health;
mod queue;
mod reseed;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_failure;
#[cfg(test)]
mod tests_seed;

pub use batched::{BatchedOptions, BatchedRedis};
pub use counts::{RoundTripCounts, RoundTrips};
pub use reseed::{NoSeeds, ReseedError, ReseedSource, Seed};
