//! [`Governance`]: the running governance of one gateway process — the store, the in-process
//! [`IdentityCache`], the admission engine, the price table and the spend-log queue — and the
//! calls the server makes on a request's path (none of which awaits the database):
//!
//! 1. [`Governance::principal`] — key hash → [`Principal`] or a 401 [`KeyError`];
//! 2. [`Principal::model_denial`] with [`Governance::access_groups`] — 403;
//! 3. [`Governance::scopes`] + [`Governance::price`] + [`crate::admission::Estimate`] →
//!    [`Governance::admit`] — 422 / 429 [`Rejection`] or a [`Charge`];
//! 4. [`Governance::settle`] once per attempt with the final usage → [`Settlement`] (cost and
//!    spend after) and one spend-log row queued for the write-behind.
//!
//! The management API writes through [`Governance::store`], then updates [`Governance::cache`]
//! and the admission counters ([`Governance::admission`]).
//!
//! In a fleet ([`Governance::announce_writes`]), those writes are also announced on the change
//! feed ([`feed`]), and every replica brings its cache up to date with
//! [`Governance::reload_identities`] ([`feed_apply`] decides when).

pub mod access;
pub mod cache;
pub mod feed;
pub mod feed_apply;
pub mod feed_redis;
mod key_miss;
pub mod principal;
mod reseed;
pub mod scopes;
mod seed;

use std::sync::Arc;

use chrono::{DateTime, Utc};

pub use access::{AccessGroups, DeniedBy, list_allows};
pub use cache::{Entities, IdentityCache, Replaced};
pub use principal::{KeyError, Principal};
pub use reseed::DatabaseSeeds;
pub use scopes::{
    BlockedEndUser, EndUserDefault, RequestFacts, end_user_limits, needs_token_count,
};

use crate::admission::{
    Admission, AdmissionConfig, AdmitRequest, CounterStoreError, InMemoryCounterStore, Limits,
    RateLimitStatus, Rejection, Reservation, ScopeKey, ScopeRequest, Settlement, SharedCounters,
};
use crate::pricing::{ModelPrice, PriceOverrides, PriceTable, Usage, cost};
use crate::store::{GovernanceStore, SpendLogQueue, SpendLogRow, StoreError, WriteBehind};

/// Settings of [`Governance`], from the config.
#[derive(Debug, Clone)]
pub struct GovernanceOptions {
    /// Status codes and the default output bound of estimates.
    pub admission: AdmissionConfig,
    /// Proxy-wide limits (`litellm_settings.max_budget`, `budget_duration`).
    pub global: Limits,
    /// Budget of end users without their own (`litellm_settings.max_end_user_budget`,
    /// `max_end_user_budget_id`).
    pub end_user_default: EndUserDefault,
    /// `model_info.access_groups` of the config.
    pub access_groups: AccessGroups,
    /// Bound of the spend-log queue, rows (oldest dropped beyond it, counted).
    pub spend_log_capacity: usize,
    /// Write one spend-log row per attempt (`general_settings.disable_spend_logs: true` turns
    /// the rows off; spend is still tracked).
    pub spend_logs: bool,
}

impl Default for GovernanceOptions {
    fn default() -> Self {
        Self {
            admission: AdmissionConfig::default(),
            global: Limits::default(),
            end_user_default: EndUserDefault::default(),
            access_groups: AccessGroups::default(),
            spend_log_capacity: 100_000,
            spend_logs: true,
        }
    }
}

/// An admitted attempt: its reservation, the price to bill it with, and its spend-log row
/// (filled at admission; tokens, cost, end time and status are set by [`Governance::settle`]).
pub struct Charge {
    /// The reservation (released, charging nothing, if the charge is dropped unsettled).
    pub reservation: Reservation,
    /// Price of the deployment called; `None` = unpriced (cost 0).
    pub price: Option<ModelPrice>,
    /// The spend-log row being built.
    pub log: SpendLogRow,
}

impl std::fmt::Debug for Charge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Charge")
            .field("request_id", &self.log.request_id)
            .finish_non_exhaustive()
    }
}

/// How an attempt ended, for [`Governance::settle`].
#[derive(Debug, Clone, Copy)]
pub struct CallOutcome {
    /// Final cumulative usage (what was produced, also for cut-off streams); `None` = nothing
    /// known (no tokens billed).
    pub usage: Option<Usage>,
    /// Whether the call succeeded (spend-log `status`).
    pub success: bool,
    /// When the answer ended.
    pub end_time: DateTime<Utc>,
    /// When its first byte was ready (time to first token).
    pub completion_start: Option<DateTime<Utc>>,
}

/// The running governance (see the module docs).
pub struct Governance {
    store: Arc<dyn GovernanceStore>,
    admission: Admission,
    cache: IdentityCache,
    prices: PriceTable,
    logs: Arc<SpendLogQueue>,
    options: GovernanceOptions,
    access: std::sync::RwLock<Arc<AccessGroups>>,
    /// The store the management API writes through once writes are announced
    /// ([`Governance::announce_writes`]).
    announced: std::sync::OnceLock<Arc<dyn GovernanceStore>>,
    /// Keys the cache does not hold are looked up in the database (a fleet replica:
    /// [`Governance::look_up_missing_keys`]).
    misses: std::sync::OnceLock<key_miss::KeyMisses>,
}

/// Loads of one [`Governance::reload_identities`] at most before it gives up (each met a local
/// write, so none is swapped in).
const RELOAD_ATTEMPTS: usize = 5;

impl std::fmt::Debug for Governance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Governance")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Governance {
    /// Migrates the store, loads every entity into the cache and seeds the in-process spend
    /// counters from the stored `spend` / `budget_reset_at` columns.
    ///
    /// Errors: the store's ([`StoreError`]).
    pub async fn open(
        store: Arc<dyn GovernanceStore>,
        prices: PriceTable,
        options: GovernanceOptions,
    ) -> Result<Self, StoreError> {
        Self::open_on(store, prices, options, None).await
    }

    /// [`Self::open`] with the spend counters in `shared` when given (a fleet's Redis),
    /// in-process otherwise. Shared counters are seeded only where the shared store does not
    /// hold a scope yet ([`Admission::seed`]): what the fleet counted stays.
    ///
    /// Errors: the store's ([`StoreError`]), [`StoreError::Counters`] when the shared
    /// counters cannot be seeded.
    pub async fn open_on(
        store: Arc<dyn GovernanceStore>,
        prices: PriceTable,
        options: GovernanceOptions,
        shared: Option<Arc<dyn SharedCounters>>,
    ) -> Result<Self, StoreError> {
        store.migrate().await?;
        let mut snapshot = store.load().await?;
        let windows = std::mem::take(&mut snapshot.model_budget_windows);
        let admission = match shared {
            Some(s) => Admission::shared(s, options.admission.clone()),
            None => Admission::new(
                Arc::new(InMemoryCounterStore::default()),
                options.admission.clone(),
            ),
        };
        let entities = Entities::from_snapshot(snapshot);
        let seeds = seed::all_seeds(
            store.as_ref(),
            admission.now(),
            &entities,
            &windows,
            &options,
        )
        .await?;
        seed::apply(&admission, &seeds).await?;
        Ok(Self {
            store,
            admission,
            cache: IdentityCache::new(entities),
            prices,
            logs: Arc::new(SpendLogQueue::new(options.spend_log_capacity)),
            access: std::sync::RwLock::new(Arc::new(options.access_groups.clone())),
            options,
            announced: std::sync::OnceLock::new(),
            misses: std::sync::OnceLock::new(),
        })
    }

    /// The database, as the management API writes to it: after
    /// [`Self::announce_writes`], the store that announces each accepted write on the fleet's
    /// change feed.
    pub fn store(&self) -> &Arc<dyn GovernanceStore> {
        self.announced.get().unwrap_or(&self.store)
    }

    /// From now on, [`Self::store`] announces every management write the database accepted on
    /// `feed` ([`crate::store::PublishingStore`]). The write-behind keeps writing spend to the
    /// plain store. Called once at start, before serving; a second call changes nothing and
    /// returns false.
    pub fn announce_writes(&self, feed: feed::ChangeFeed) -> bool {
        let publishing = crate::store::PublishingStore::new(Arc::clone(&self.store), feed);
        self.announced.set(Arc::new(publishing)).is_ok()
    }

    /// Brings the identity cache up to what the database holds now (other replicas' writes,
    /// rows written straight to the database): one full [`GovernanceStore::load`], swapped in
    /// with [`IdentityCache::replace`] (end users only this replica knows yet are kept; a
    /// team's change reaches its keys' principals because principals are resolved from the
    /// cache on every request). If a management write of this replica ended while the load
    /// ran, the load may predate it: it is loaded again, a few milliseconds later each time
    /// (at most [`RELOAD_ATTEMPTS`] loads). Spend counters are left alone: a reload never
    /// resets spend.
    ///
    /// Errors: the store's ([`StoreError`]); [`StoreError::WrittenDuringReload`] when every
    /// load met a local write (swapping the last one in could drop a key created a moment
    /// ago, so it is not: the change feed's refresh retries after its delay). The cache is
    /// then unchanged.
    pub async fn reload_identities(&self) -> Result<Replaced, StoreError> {
        let mut attempt = 1;
        loop {
            let before = self.cache.generation();
            let mut snapshot = self.store.load().await?;
            snapshot.model_budget_windows.clear();
            let fresh = Entities::from_snapshot(snapshot);
            if let Ok(r) = self.cache.replace_unless_written_since(fresh, before) {
                return Ok(r);
            }
            if attempt >= RELOAD_ATTEMPTS {
                return Err(StoreError::WrittenDuringReload(attempt));
            }
            // a burst of writes (a script creating a team and its keys) passes in milliseconds
            tokio::time::sleep(std::time::Duration::from_millis(5 * attempt as u64)).await;
            attempt += 1;
        }
    }

    /// The admission engine (spend and counters).
    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    /// The entity cache.
    pub fn cache(&self) -> &IdentityCache {
        &self.cache
    }

    /// The price table.
    pub fn prices(&self) -> &PriceTable {
        &self.prices
    }

    /// Queued spend-log rows.
    pub fn logs(&self) -> &Arc<SpendLogQueue> {
        &self.logs
    }

    /// Settings.
    pub fn options(&self) -> &GovernanceOptions {
        &self.options
    }

    /// Access groups in force: the config's, and those of deployments added at runtime
    /// ([`Self::set_access_groups`]).
    pub fn access_groups(&self) -> Arc<AccessGroups> {
        Arc::clone(&self.access.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Replaces the access groups (a deployment with `model_info.access_groups` was added,
    /// changed or removed); in force for the next request.
    pub fn set_access_groups(&self, groups: AccessGroups) {
        *self.access.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(groups);
    }

    /// The write-behind task writing spend counters and spend logs (`batch` rows per
    /// transaction); run it with [`WriteBehind::run`].
    pub fn write_behind(&self, batch: usize) -> WriteBehind {
        WriteBehind::new(
            Arc::clone(&self.store),
            self.admission.clone(),
            Arc::clone(&self.logs),
            batch,
        )
    }

    /// The virtual key with hash `hash`, with what it inherits, now.
    ///
    /// Errors: [`KeyError`] (all 401).
    pub fn principal(&self, hash: &str) -> Result<Principal, KeyError> {
        Principal::resolve(&self.cache.read(), hash, self.admission.now())
    }

    /// The scopes of a request (see [`scopes`]). An end user seen for the first time gets its
    /// cache row here (no limits of its own, spend 0; its `"LiteLLM_EndUserTable"` row is
    /// written behind with its spend), so `/customer/info`, `/customer/update` and
    /// `/customer/list` know it from its first request on, as LiteLLM's do once the row exists.
    /// Only a first request takes the cache's write lock.
    ///
    /// Errors: [`BlockedEndUser`].
    pub fn scopes(
        &self,
        principal: Option<&Principal>,
        facts: RequestFacts<'_>,
    ) -> Result<Vec<ScopeRequest>, BlockedEndUser> {
        let mut unseen = false;
        let out = scopes::build_noting(
            &self.cache.read(),
            principal,
            facts,
            &self.options.global,
            &self.options.end_user_default,
            &mut unseen,
        )?;
        if let (true, Some(id)) = (unseen, facts.end_user) {
            self.cache.note_end_user(id);
        }
        Ok(out)
    }

    /// The price of `model` at `provider` with a deployment's overrides; `None` = unpriced.
    pub fn price(
        &self,
        provider: Option<&str>,
        model: &str,
        overrides: &PriceOverrides,
    ) -> Option<ModelPrice> {
        self.prices.price_for(provider, model, overrides)
    }

    /// Admits one attempt (see [`Admission::admit`]) and starts its spend-log row.
    ///
    /// Errors: the [`Rejection`] to send (422 budget, 429 limits, 503 when shared counters
    /// cannot answer).
    pub async fn admit(
        &self,
        req: AdmitRequest,
        price: Option<ModelPrice>,
        log: SpendLogRow,
    ) -> Result<Charge, Rejection> {
        let reservation = self.admission.admit(req).await?;
        Ok(Charge {
            reservation,
            price,
            log,
        })
    }

    /// Settles an attempt exactly once: bills `outcome.usage` at the charge's price, replaces
    /// the reservation by it on every scope, and queues the spend-log row. Returns the cost
    /// and spend after (`None` if the charge was settled before).
    pub fn settle(&self, charge: Charge, outcome: CallOutcome) -> Option<Settlement> {
        self.settle_reporting(charge, outcome).map(|(s, _)| s)
    }

    /// [`Self::settle`], also returning the remaining-limit values (for `x-ratelimit-*`
    /// headers, [`crate::admission::rate_limit_headers`]) counting the tokens actually used.
    /// In-process, remaining tokens are read from the counters after settlement: the window's
    /// settled tokens plus what requests in flight reserve (a 150-token answer in a 30-token
    /// window leaves 0 remaining; a 9-token answer in a 100-token window leaves 91, not the
    /// admission's view with its worst-case reservation). With shared counters nothing is
    /// read (no round trip after the call): the admission's view with this request's
    /// reservation replaced by its actual tokens ([`Reservation::rate_limits_after`]).
    pub fn settle_reporting(
        &self,
        charge: Charge,
        outcome: CallOutcome,
    ) -> Option<(Settlement, Vec<RateLimitStatus>)> {
        let Charge {
            mut reservation,
            price,
            mut log,
        } = charge;
        let usage = outcome.usage.unwrap_or_default();
        let cost_usd = price.as_ref().map_or(0.0, |p| cost(&usage, p));
        let settlement = reservation.settle(&usage, cost_usd).ok()?;
        let rates = if self.admission.is_shared() {
            reservation.rate_limits_after(usage.total_tokens())
        } else {
            let mut rates = reservation.rate_limits().to_vec();
            for r in &mut rates {
                if let (Some(rem), Some(limit)) = (r.remaining_tokens.as_mut(), r.limit_tokens)
                    && let Some(now) = self.admission.local_spend(&r.scope)
                {
                    *rem = limit.saturating_sub(now.window_tokens);
                }
            }
            rates
        };
        log.spend = settlement.cost_usd;
        log.prompt_tokens = i64::try_from(usage.prompt_tokens).unwrap_or(i64::MAX);
        log.completion_tokens = i64::try_from(usage.completion_tokens).unwrap_or(i64::MAX);
        log.total_tokens = log.prompt_tokens.saturating_add(log.completion_tokens);
        log.end_time = outcome.end_time;
        log.completion_start_time = outcome.completion_start;
        log.status = Some(
            if outcome.success {
                "success"
            } else {
                "failure"
            }
            .to_owned(),
        );
        if self.options.spend_logs {
            self.logs.push(log);
        }
        Some((settlement, rates))
    }

    /// Current spend of a scope in its window, USD (0 when never used). With shared counters
    /// one round trip: management reads only.
    ///
    /// Errors: [`CounterStoreError`] when shared counters cannot answer.
    pub async fn spend_of(&self, scope: &ScopeKey) -> Result<f64, CounterStoreError> {
        Ok(self.admission.spend(scope).await?.map_or(0.0, |s| s.spend))
    }

    /// Current spend of a scope, USD, when it is known without I/O: in-process counters
    /// (0 when never used); `None` with shared counters. For a request's path.
    pub fn local_spend_of(&self, scope: &ScopeKey) -> Option<f64> {
        match self.admission.is_shared() {
            true => None,
            false => Some(self.admission.local_spend(scope).map_or(0.0, |s| s.spend)),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod reload_tests;
