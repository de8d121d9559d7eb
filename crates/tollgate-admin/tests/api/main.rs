//! The management API driven through its router (in-memory SQLite, stub auth and models).

mod common;

mod budgets;
mod customers;
mod errors;
mod key_lifecycle;
mod keys;
mod models;
mod models_v2;
mod organizations;
mod roles;
mod spend;
mod spend_scale;
mod spend_summary;
mod tags;
mod team_defaults;
mod teams;
mod users;
mod windows;
