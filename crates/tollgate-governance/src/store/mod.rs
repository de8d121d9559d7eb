//! Entities and persistence: virtual keys, teams, users, end users, budget tiers, tags,
//! organizations, spend-log rows, and the store that loads and writes them.

mod keys;

pub use keys::{SecretKey, hash_key, is_key_hash, mask_key};
