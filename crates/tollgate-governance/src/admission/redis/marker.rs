//! The fleet marker and the reseed lock: how replicas notice that Redis lost its data (a
//! restart without persistence) and agree on which one seeds the scopes again.
//!
//! The marker `{p}:fleet` is written once the scopes are seeded; a checked reservation
//! ([`RedisCounterStore::reserve_checked`]) looks for it in the same function call, so the
//! check costs no round trip. The lock `{p}:reseed` (`SET NX PX`) lets one replica of the
//! fleet seed while the others wait for the marker.

use std::time::Duration;

use super::super::store::ReserveRequest;
use super::super::store_async::CounterStoreError;
use super::reply::{self, ReserveOutcome};
use super::store::{RedisCounterStore, unavailable};

impl RedisCounterStore {
    /// Reserves as [`AsyncCounterStore::reserve`](super::super::AsyncCounterStore::reserve),
    /// and answers [`ReserveOutcome::Unseeded`] (reserving nothing) when the fleet marker is
    /// missing. One round trip.
    ///
    /// # Errors
    /// As any call: [`CounterStoreError`].
    pub async fn reserve_checked(
        &self,
        req: &ReserveRequest<'_>,
    ) -> Result<ReserveOutcome, CounterStoreError> {
        self.reserve_call(req, true).await
    }

    /// True when the fleet marker is present.
    ///
    /// # Errors
    /// As any call.
    pub async fn is_seeded(&self) -> Result<bool, CounterStoreError> {
        let mut cmd = redis::cmd("EXISTS");
        cmd.arg(self.keys.fleet());
        let v = self.conn.send(&cmd).await.map_err(unavailable)?;
        Ok(reply::int(&v).ok_or_else(|| reply::bad("exists", &v))? == 1)
    }

    /// Writes the fleet marker (the scopes are seeded), a new random generation: a batch sent
    /// again after Redis lost its data can tell.
    ///
    /// # Errors
    /// As any call.
    pub async fn mark_seeded(&self) -> Result<(), CounterStoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.keys.fleet())
            .arg(format!("{:016x}", rand::random::<u64>()));
        self.conn.send(&cmd).await.map_err(unavailable)?;
        Ok(())
    }

    /// The fleet generation (the marker's value), `None` when the marker is missing.
    ///
    /// # Errors
    /// As any call.
    pub async fn fleet_generation(&self) -> Result<Option<String>, CounterStoreError> {
        let mut cmd = redis::cmd("GET");
        cmd.arg(self.keys.fleet());
        let v = self.conn.send(&cmd).await.map_err(unavailable)?;
        match &v {
            redis::Value::Nil => Ok(None),
            redis::Value::BulkString(b) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
            _ => Err(reply::bad("get", &v)),
        }
    }

    /// Takes the reseed lock for `ttl` unless another replica holds it; true when taken.
    ///
    /// # Errors
    /// As any call.
    pub async fn try_lock_reseed(&self, ttl: Duration) -> Result<bool, CounterStoreError> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.keys.reseed_lock())
            .arg("1")
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis().max(1).to_string());
        let v = self.conn.send(&cmd).await.map_err(unavailable)?;
        Ok(!matches!(v, redis::Value::Nil))
    }

    /// Drops the reseed lock (after the marker is written).
    ///
    /// # Errors
    /// As any call.
    pub async fn unlock_reseed(&self) -> Result<(), CounterStoreError> {
        let mut cmd = redis::cmd("DEL");
        cmd.arg(self.keys.reseed_lock());
        self.conn.send(&cmd).await.map_err(unavailable)?;
        Ok(())
    }

    /// Writes one seed only if Redis does not hold the scope (`tollgate_v2_seed_absent`): one
    /// call. Returns true when written.
    ///
    /// # Errors
    /// As any call.
    pub async fn seed_absent(
        &self,
        seed: &crate::admission::fleet::Seed,
    ) -> Result<bool, CounterStoreError> {
        Ok(self.seed_absent_many(std::slice::from_ref(seed)).await? == 1)
    }
}
