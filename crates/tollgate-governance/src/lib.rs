//! # tollgate-governance
//!
//! Identities, budgets, limits, pricing and settlement for the gateway — everything the request
//! path needs to decide *whether* a request may go upstream and *what it cost*, with no database
//! on that path. No HTTP here: the server wires these pieces into its pipeline.
//!
//! | module | job |
//! |---|---|
//! | [`pricing`] | [`pricing::PriceTable`] (built-in table, LiteLLM-format maps, per-deployment overrides) and [`pricing::cost`] |
//! | [`duration`] | LiteLLM durations (`30s` … `1mo`), standardised `budget_reset_at`, injectable [`duration::Clock`] |
//! | [`tokens`] | prompt token counts for admission (exact o200k/cl100k BPE, bytes/4 for other models) |
//! | [`admission`] | [`admission::Admission`]: atomic multi-scope reservations of budget, RPM, TPM and parallel slots; settlement |
//! | [`store`] | entities (LiteLLM's tables), key hashing, per-model budgets, [`store::GovernanceStore`] (SQLite, Postgres), write-behind |
//!
//! # The flow the server follows
//!
//! **At start**
//! 1. `let db = store::SqliteStore::open(path).await?; db.migrate().await?;`
//! 2. `let snap = db.load().await?` → build the identity cache (key hash → key row, team, user,
//!    membership, budget tiers, org, tags). Seed counters:
//!    `admission.set_spend(&ScopeKey::key(&k.token), k.spend, k.budget_reset_at)` for every
//!    entity with spend.
//! 3. `let admission = admission::Admission::new(Arc::new(InMemoryCounterStore::default()), cfg)`;
//!    `let logs = Arc::new(store::SpendLogQueue::new(100_000))`;
//!    spawn `store::WriteBehind::new(db, admission.clone(), logs.clone(), 500).run(1s, shutdown_rx)`.
//!    Call `tokens::warm_up()` so the first request does not build the BPE tables.
//!
//! **Per request** (nothing below awaits a database)
//! 1. *Authenticate*: `store::hash_key(bearer)` → identity from the cache (401 if absent,
//!    blocked, or [`store::VerificationToken::is_expired`]). Never log the bearer value; use
//!    [`store::mask_key`] or the hash.
//! 2. *Model access* (server/router: alias and wildcard resolution against the key's, team's
//!    and user's `models`) → 403.
//! 3. *Estimate*: `let enc = tokens::Encoding::for_model(&deployment_model);`
//!    `let prompt = tokens::count_chat_messages(enc, &body["messages"]) + tokens::count_tools(enc, &body["tools"]);`
//!    `let price = prices.price_for(provider, model, &deployment_overrides);`
//!    `let est = admission::Estimate::new(admission.config(), price.as_ref(), prompt, max_tokens);`
//! 4. *Admit*: build one [`admission::ScopeRequest`] per scope the request touches, with its
//!    [`admission::Limits`] from the cache — the key's `limits().tighter(&tier.limits())` (the
//!    tighter cap; the tier's window when the key has none), team, team member (`ScopeKey::team_member`), user, end user (its tier's limits),
//!    organization, each tag, each per-model limit (`ScopeKey::model_per_key`, from
//!    `model_limits_for()`), and `ScopeKey::global()`; key display `"<alias> (sk-...abcd)"`.
//!    `admission.admit(AdmitRequest { request_id, attempt, scopes, estimate })`:
//!    - `Err(rejection)` → answer `rejection.status` with
//!      `{"error":{"message": rejection.message, "type": rejection.error_type, "param": null, "code": "<status>"}}`
//!      and `rejection.headers`; the upstream is never called.
//!    - `Ok(reservation)` → add `reservation.rate_limit_headers()` to the response.
//! 5. *Dispatch* upstream; keep the `Reservation` with the response/stream task.
//! 6. *Settle* once the final cumulative usage is known (end of stream, error, client hang-up
//!    with what was produced): `let cost = pricing::cost(&usage, &price);`
//!    `let s = reservation.settle(&usage, cost)?;` → `x-litellm-response-cost` = `s.cost_usd`,
//!    `x-litellm-key-spend` = `s.spend_of(ScopeKind::Key)`. Dropping an unsettled reservation
//!    releases it (nothing charged). Each retry/fallback attempt that reaches an upstream gets its
//!    own `admit` with `attempt + 1`.
//! 7. *Log*: `logs.push(store::SpendLogRow { request_id, api_key: key_hash, spend: s.cost_usd, … })`
//!    — written behind in batches.
//!
//! **Management API** writes through `db.upsert_*` / `db.delete_*`, then updates the cache, and
//! calls `admission.set_spend` / `admission.reset_spend` / `admission.arm_window` (a
//! `budget_duration` change, [`admission::WindowPlan`]) so a change is in force on the next
//! request.
//!
//! # Measured
//!
//! `cargo bench -p tollgate-governance` (admission, token counting); the results are in
//! `bench/README.md` ("Micro-benchmark results").

pub mod admission;
pub mod duration;
pub mod pricing;
pub mod runtime;
pub mod store;
pub mod tokens;

#[cfg(test)]
pub(crate) mod test_support;
