//! [`RedisCounterStore`]: budgets and RPM/TPM/parallel counters shared by many replicas through
//! Redis 7+ (or Redis Cluster), exact across replicas, **one round trip per admission**.
//!
//! # One round trip
//!
//! Every operation of [`AsyncCounterStore`](super::AsyncCounterStore) is one `FCALL` of the
//! versioned function library `library.lua` ([`LIBRARY_NAME`], loaded with
//! `FUNCTION LOAD REPLACE` at connect): `reserve` checks every scope's budget, then every
//! scope's RPM, TPM and parallel limit, and reserves on all of them or none, in one atomic
//! function run. Budget windows whose `budget_reset_at` has passed are reset first, and the
//! RPM/TPM windows, the budget resets and the leases all run on the **Redis server's clock**
//! (`TIME`), so replicas with drifting clocks still share one window. The reply carries the
//! ticket data and the `x-ratelimit-*` values per scope, or the denial (which scope, and the
//! numbers [`Denial`](super::Denial) carries). `settle` and `release` are exactly once per
//! (request id, attempt): the attempt's ticket key records the reservation and is deleted by
//! the first of them, so a second one (a retried batch) changes nothing. `spend` is one
//! `HMGET`. When a server answers that the function is missing (`FUNCTION FLUSH`, a fresh
//! server, a failover to a replica without the library), the client loads the library and
//! sends the call again, once.
//!
//! The rules are the in-process store's ([`InMemoryCounterStore`](super::InMemoryCounterStore)),
//! rule for rule (see [`crate::admission`]); the tests run the same scenarios on both.
//!
//! # Redis Cluster: one slot
//!
//! A request's scopes (key, team, user, end user, global...) are shared with other requests in
//! every combination, so no per-request choice of slot can keep one scope's counter in one
//! place. All keys of a store therefore carry the same hash tag, the configurable prefix:
//! `{tollgate}:s:api_key:<hash>`, `{tollgate}:t:<attempt>:<request id>` (see `keys.rs`). Every
//! function call touches keys of that one slot, so the cluster runs it on one primary, whole:
//! all or nothing holds exactly as on a single server, with no two-phase reserve and no
//! compensation. The cost: the counters do not shard. One primary (one Redis core) carries all
//! admission traffic of the fleet; the other primaries only add failover. Measured with
//! `redis-benchmark` against a private Redis 7.0 on the 2-core development machine while other
//! builds loaded it (2026-12-02): a reservation over four scopes (key, team, end user, global;
//! budgets, RPM, TPM) takes 120 µs of server time (`INFO commandstats`, 17 commands inside the
//! function; a bare `FCALL` of the library takes 8 µs on the same run), so one primary of that
//! machine admits about 8 000 requests per second (each settlement is one more call). A fleet
//! that needs more splits its tenants over several prefixes (one store per prefix, each its own
//! slot). The connection to a cluster routes each call by its first key, follows `MOVED` /
//! `ASK`, and `FUNCTION LOAD` goes to every primary. The tests run the all-or-nothing,
//! exactly-once and two-replica budget scenarios on a three-primary cluster they start.
//!
//! # Connections
//!
//! redis-rs (`redis` crate): a `ConnectionManager` (one multiplexed connection that reconnects
//! by itself), a cluster connection (one multiplexed connection per node), or a primary found
//! through Sentinel and looked up again after a failover
//! ([`RedisCounterStore::connect_sentinel`]). Concurrent calls
//! from all of a replica's tasks are pipelined on that connection without waiting for each
//! other, which is what a pool would buy, without a pool. redis-rs rather than fred: its
//! cluster routing already knows `FCALL` (routed by its first key; `FUNCTION LOAD` sent to every
//! primary), one crate covers plain, TLS (rustls), Sentinel and cluster connections, and it is
//! the most used Rust client; nothing fred adds (its own pools, client-side tracking helpers) is
//! needed here.
//!
//! # Replicas that die
//!
//! A reservation still in flight when its lease ends ([`RedisStoreOptions::lease`], default
//! 2 h) is released by the next reservation of any replica, eight at a time: its replica died
//! or lost its connection before settling. Its ticket becomes a tombstone, so a request that
//! did outlive its lease is still charged its actual usage, once, when it settles.
//!
//! # Exactness
//!
//! Money is stored as integer units of 1e-10 USD (`super::money`), changed only by `HINCRBY`
//! with exact decimal arguments, so stored counters are exact 64-bit integers. Comparisons run
//! in Lua's doubles: exact up to 2^53 units (900 719 USD of spend plus reservations per scope
//! and window); above that a budget check may be off by one unit per 2^53.

mod batch;
mod keys;
mod library;
mod marker;
mod policy;
mod reply;
mod sentinel;
mod store;

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_cluster;
#[cfg(test)]
mod tests_fleet;
#[cfg(test)]
mod tests_sentinel;
#[cfg(test)]
pub(crate) mod tests_wire;

pub use batch::{BatchOp, BatchOptions};
pub use library::LIBRARY_NAME;
pub use policy::{BudgetsOnFailure, FailurePolicy, LimitsOnFailure, PolicyError};
pub use reply::{OpOutcome, ReserveOutcome};
pub use sentinel::SentinelAuth;
pub use store::{RedisCounterStore, RedisStoreOptions};
