//! The post-call operations of many requests on the wire: settlements, releases and charges of
//! local fallback usage, sent as `tollgate_v2_batch` calls in one pipeline (one round trip),
//! and the start-up seed of many scopes, the same way.
//!
//! One pipeline of several calls rather than one call carrying the whole batch: a function
//! call runs alone on the server, so one call of 256 settlements would hold every replica's
//! reservations behind it for its whole run. Measured on a private Redis 7 of the 2-core
//! development machine while other builds loaded it (2026-12-02, `tests_batch_wire.rs`),
//! settlements over four scopes: 50-72 µs of server time each inside batch calls against
//! 82-92 µs as one call each, a call of 32 running 1.6-2.3 ms (one of 256 would run about
//! 15 ms). Calls of [`BatchOptions::ops_per_call`] operations let reservations run between
//! them, and the pipeline still costs one round trip.

use std::sync::Arc;

use redis::Pipeline;

use super::super::store::{Actual, Ticket};
use super::super::store_async::CounterStoreError;
use super::library::{self, function};
use super::reply::{self, OpOutcome};
use super::store::{RedisCounterStore, ms, opt, unavailable};
use crate::admission::fleet::Seed;
use crate::admission::money::usd_to_units;

/// One post-call operation, as queued by a batcher.
#[derive(Debug, Clone)]
pub enum BatchOp {
    /// Replace the ticket's reservation by the actual usage, exactly once per ticket key.
    Settle(Ticket, Actual),
    /// Drop the ticket's reservation, exactly once per ticket key.
    Release(Ticket),
    /// Add usage counted on a replica's local fallback to the ticket's scopes, exactly once per
    /// (request id, attempt) through its charge key.
    Charge(Ticket, Actual),
}

impl BatchOp {
    /// The ticket the operation is about.
    pub fn ticket(&self) -> &Ticket {
        match self {
            BatchOp::Settle(t, _) | BatchOp::Release(t) | BatchOp::Charge(t, _) => t,
        }
    }
}

/// How a batch is cut into calls.
#[derive(Debug, Clone, Copy)]
pub struct BatchOptions {
    /// Operations per `FCALL` of the pipeline (at least 1; default 32).
    pub ops_per_call: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        Self { ops_per_call: 32 }
    }
}

/// Which leading operations of a batch were sent before (a send whose reply was lost).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resent {
    /// How many of the batch's first operations were sent before.
    pub count: usize,
    /// The fleet generation (the marker's value, [`BatchReply::Done`]) when they were; a
    /// different one now means Redis lost its data since, and what they did with it.
    pub generation: Option<Arc<str>>,
}

/// What a batch's round trip answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchReply {
    /// The fleet generation, and one outcome per operation, in order.
    Done(Arc<str>, Vec<OpOutcome>),
    /// The fleet marker is missing (Redis lost its data): some calls of the pipeline ran
    /// nothing; seed the fleet again, then send the whole batch again (what did run is a
    /// no-op the second time).
    Unseeded,
}

/// Seeds per `FCALL` of a seeding pipeline.
const SEEDS_PER_CALL: usize = 256;

impl RedisCounterStore {
    /// Sends `ops` in one round trip: a pipeline of `tollgate_v2_batch` calls of at most
    /// `opts.ops_per_call` operations each. Returns one outcome per operation, in order, or
    /// [`BatchReply::Unseeded`] when the fleet marker is missing. A failed operation
    /// ([`OpOutcome::Failed`]) fails only itself.
    ///
    /// The first `resent.count` operations were sent before (a send whose reply was lost):
    /// for them, as for every release and charge, an operation already applied changes nothing
    /// (its ticket or charge key). A settlement never sent before (or sent before Redis lost
    /// its data: another generation) whose ticket Redis does not hold lost it with Redis's
    /// data, and its actual usage is charged all the same: nothing settled is lost.
    ///
    /// # Errors
    /// [`CounterStoreError::Unavailable`] when the round trip fails (nothing can be assumed
    /// about which operations took effect: send them again); `BadReply` for a reply of another
    /// shape.
    pub async fn batch(
        &self,
        ops: &[BatchOp],
        resent: &Resent,
        opts: BatchOptions,
    ) -> Result<BatchReply, CounterStoreError> {
        if ops.is_empty() {
            return Ok(BatchReply::Done(Arc::from(""), Vec::new()));
        }
        let chunk = opts.ops_per_call.max(1);
        let mut pipe = redis::pipe();
        for (i, part) in ops.chunks(chunk).enumerate() {
            let first = i * chunk;
            let before = resent.count.saturating_sub(first);
            self.batch_call(&mut pipe, part, before, resent.generation.as_deref());
        }
        let replies = self.pipeline(&pipe).await?;
        let mut out = Vec::with_capacity(ops.len());
        let mut generation = String::new();
        for (part, v) in ops.chunks(chunk).zip(&replies) {
            if reply::int(v) == Some(-1) {
                return Ok(BatchReply::Unseeded);
            }
            let (g, outcomes) = reply::batch(v, part.len())?;
            generation = g;
            out.extend(outcomes);
        }
        if out.len() != ops.len() {
            return Err(CounterStoreError::BadReply {
                operation: "batch",
                detail: format!("{} replies for {} operations", out.len(), ops.len()),
            });
        }
        Ok(BatchReply::Done(Arc::from(generation), out))
    }

    /// Appends one `tollgate_v2_batch` call for `ops`, the first `resent` of them sent before
    /// in fleet `generation`, to `pipe` (argument shapes: `library.lua`).
    fn batch_call(
        &self,
        pipe: &mut Pipeline,
        ops: &[BatchOp],
        resent: usize,
        generation: Option<&str>,
    ) {
        let mut keys = vec![self.keys.dirty(), self.keys.leases(), self.keys.fleet()];
        let mut args = vec![
            self.opts.rate_window_ms.to_string(),
            self.opts.lease.as_millis().to_string(),
            generation.unwrap_or_default().to_string(),
        ];
        for (i, op) in ops.iter().enumerate() {
            let t = op.ticket();
            let (kind, actual) = match op {
                BatchOp::Settle(_, a) if i < resent => ("S", *a),
                BatchOp::Settle(_, a) => ("s", *a),
                BatchOp::Release(_) => ("r", Actual::default()),
                BatchOp::Charge(_, a) => ("c", *a),
            };
            keys.push(match op {
                BatchOp::Charge(..) => self.keys.charge(&t.request_id, t.attempt),
                _ => self.keys.ticket(&t.request_id, t.attempt),
            });
            keys.extend(t.scopes.iter().map(|s| self.keys.scope(s)));
            let (cost, tokens) = match op {
                BatchOp::Charge(..) => (actual.cost_units, actual.tokens),
                _ => (t.cost_units, t.tokens),
            };
            args.extend([
                kind.to_string(),
                t.scopes.len().to_string(),
                cost.to_string(),
                tokens.to_string(),
                actual.cost_units.to_string(),
                actual.tokens.to_string(),
            ]);
        }
        pipe.cmd("FCALL")
            .arg(function::BATCH)
            .arg(keys.len())
            .arg(keys)
            .arg(args);
    }

    /// Sends `pipe`; when the server has lost the library, loads it and sends it again, once
    /// (every call of a pipeline this store builds is safe to repeat).
    async fn pipeline(&self, pipe: &Pipeline) -> Result<Vec<redis::Value>, CounterStoreError> {
        match self.conn.send_pipe(pipe).await {
            Err(e) if library::is_missing(&e) => {
                self.load_library().await?;
                self.conn.send_pipe(pipe).await.map_err(unavailable)
            }
            r => r.map_err(unavailable),
        }
    }

    /// Writes each seed whose scope Redis does not hold yet (`tollgate_v2_seed_absent`), all in
    /// one round trip. Returns how many scopes were written.
    ///
    /// # Errors
    /// As [`Self::batch`].
    pub async fn seed_absent_many(&self, seeds: &[Seed]) -> Result<u64, CounterStoreError> {
        if seeds.is_empty() {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        for part in seeds.chunks(SEEDS_PER_CALL) {
            let keys: Vec<String> = part.iter().map(|s| self.keys.scope(&s.scope)).collect();
            let mut args = Vec::with_capacity(3 * part.len());
            for s in part {
                args.push(usd_to_units(s.spend_usd).to_string());
                args.push(ms(s.budget_reset_at));
                args.push(opt(s.duration));
            }
            pipe.cmd("FCALL")
                .arg(function::SEED_ABSENT)
                .arg(keys.len())
                .arg(keys)
                .arg(args);
        }
        let replies = self.pipeline(&pipe).await?;
        replies.iter().try_fold(0u64, |n, v| {
            let w = reply::int(v).ok_or_else(|| reply::bad("seed_absent", v))?;
            Ok(n + u64::try_from(w).unwrap_or(0))
        })
    }
}
