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
//!
//! # After the call: batches
//!
//! Settlements and releases of many requests leave together: [`BatchOp`]s sent by
//! [`RedisCounterStore::batch`] as one pipeline of `tollgate_v2_batch` calls (one round trip;
//! `batch.rs` says why a pipeline of calls of 32 rather than one call), each operation exactly
//! once through its ticket key (or, for usage counted on a local fallback, its charge key
//! `{p}:c:<attempt>:<request id>`), each failing alone ([`OpOutcome::Failed`]). The batcher
//! that queues and sends them, [`crate::admission::fleet::BatchedRedis`], is what the engine
//! uses as its [`SharedCounters`](super::SharedCounters) on Redis; a reservation there also
//! returns each scope's settled spend at admission (`Ticket::spend_units`, for the response's
//! spend headers) and checks the fleet marker, in the same one call.
//!
//! # When Redis fails
//!
//! [`FailurePolicy`] (from the environment: [`FailurePolicy::from_env`]) decides what a
//! reservation does when Redis errors or does not answer within
//! `TOLLGATE_REDIS_TIMEOUT_MS` (default 250 ms; the client never waits longer):
//!
//! | variable | values | default |
//! |---|---|---|
//! | `TOLLGATE_REDIS_ON_FAILURE_BUDGETS` | `closed` (refuse: the server answers 503), `open` (admit unchecked) | `closed` |
//! | `TOLLGATE_REDIS_ON_FAILURE_LIMITS` | `local`, `closed`, `open` | `local` |
//! | `TOLLGATE_REPLICAS` | replicas sharing the limits | 1 |
//! | `TOLLGATE_REDIS_TIMEOUT_MS` | ms | 250 |
//!
//! - A request with a finite budget on any scope is refused while budgets fail `closed`. A
//!   replica cannot know what the fleet spent, so budgets are never counted locally.
//! - Otherwise, with limits `local`, it is counted on the replica's own in-process counters,
//!   every RPM/TPM/parallel limit divided by `TOLLGATE_REPLICAS` (rounded down, at least 1),
//!   and its ticket remembered as local. Its settlement settles locally and queues a charge of
//!   its actual cost and tokens to the Redis scopes, exactly once per (request, attempt), so
//!   when Redis is back the spend it holds is what was billed.
//! - A reservation that failed may still take effect once Redis reads it (a timeout): a
//!   release of it is queued behind it, which frees it or finds nothing.
//! - After a failure, reservations skip Redis for a back-off (1 s) instead of trying it once
//!   per request; a batch delivered again ends the back-off.
//! - **Redis restarted empty** (no persistence): the fleet marker `{p}:fleet`, written once the
//!   scopes are seeded, is gone. The next reservation answers so (nothing reserved), the
//!   replica seeds every scope from the server's [`ReseedSource`](crate::admission::fleet::ReseedSource)
//!   (the database) where Redis does not hold it, under a fleet-wide lock so one replica
//!   seeds while the others wait for the marker, and reserves again. Batches wait for the
//!   marker too (a charge must not create a scope the seed would then skip). Requests in
//!   flight at the restart lost their tickets: a settlement whose ticket Redis does not hold
//!   is charged its actual usage, unless it was sent before in the same generation (the
//!   marker's random value), where the send whose reply was lost may have applied it. The one
//!   case counted twice: a settlement applied, drained to the database and then lost with
//!   Redis before its reply arrived. Only [`RedisCounterStore::reserve_checked`] checks the
//!   marker; the plain [`AsyncCounterStore`](super::AsyncCounterStore) reserve does not.

mod batch;
mod keys;
mod library;
mod marker;
mod policy;
mod reply;
mod sentinel;
mod store;
mod tcp;

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_batch_wire;
#[cfg(test)]
pub(crate) mod tests_cluster;
#[cfg(test)]
mod tests_fleet;
#[cfg(test)]
mod tests_sentinel;
#[cfg(test)]
pub(crate) mod tests_wire;

pub use batch::{BatchOp, BatchOptions, BatchReply, Resent};
pub use library::LIBRARY_NAME;
pub use policy::{BudgetsOnFailure, FailurePolicy, LimitsOnFailure, PolicyError};
pub use reply::{OpOutcome, ReserveOutcome};
pub use sentinel::SentinelAuth;
pub use store::{RedisCounterStore, RedisStoreOptions};
pub use tcp::{client, tcp_settings};
