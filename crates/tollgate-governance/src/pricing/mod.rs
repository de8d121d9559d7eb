//! Prices and cost.
//!
//! - [`ModelPrice`]: one model's prices in **USD per token** (and USD per request).
//! - [`PriceTable`]: a map of model name → [`ModelPrice`], looked up by `provider/model`
//!   then `model` ([`PriceTable::lookup`]).
//! - [`PriceTable::builtin`]: Tollgate's own table (`data/prices.json`, USD per 1M tokens,
//!   written from the providers' public price pages).
//! - [`PriceTable::from_litellm_json`] / [`PriceTable::load_litellm_file`]: LiteLLM's
//!   `model_prices_and_context_window.json` format (litellm-surface §6.1).
//! - [`PriceOverrides`]: per-deployment `model_info`/`litellm_params` overrides
//!   (`input_cost_per_token`, ...).
//! - [`cost`]: the cost of one request's [`Usage`].

mod builtin;
mod cost;
mod litellm;
mod table;

pub use cost::{CostBreakdown, Usage, cost, cost_breakdown};
pub use table::{ModelPrice, PriceOverrides, PriceTable};

/// Errors loading a price table.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The file could not be read.
    #[error("cannot read price map {path}: {source}")]
    Io {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The document is not valid JSON, or not a JSON object of model entries.
    #[error("invalid price map: {0}")]
    Format(String),
}
