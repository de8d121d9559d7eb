//! The Lua function library (`library.lua`): its name, its functions, and how a missing library
//! is recognised.

/// The library's source, loaded with `FUNCTION LOAD REPLACE`. Its first line names it
/// [`LIBRARY_NAME`].
pub(crate) const SOURCE: &str = include_str!("library.lua");

/// The library name; the version is part of it (and of every function name), so a fleet in the
/// middle of a rolling deploy runs each version's code side by side. Change the code, change
/// the version: `FUNCTION LOAD REPLACE` of one name by two different codes would let one
/// replica's load silently swap the rules under the other's feet.
pub const LIBRARY_NAME: &str = "tollgate_v2";

/// `FCALL` names of the library's functions.
pub(crate) mod function {
    /// Check and reserve every scope of a request, all or nothing.
    pub(crate) const RESERVE: &str = "tollgate_v2_reserve";
    /// Replace a reservation by the actual usage, exactly once.
    pub(crate) const SETTLE: &str = "tollgate_v2_settle";
    /// Drop a reservation, exactly once.
    pub(crate) const RELEASE: &str = "tollgate_v2_release";
    /// Settle, release and charge many tickets in one call, each exactly once.
    pub(crate) const BATCH: &str = "tollgate_v2_batch";
    /// Write scopes only where their hash does not exist yet.
    pub(crate) const SEED_ABSENT: &str = "tollgate_v2_seed_absent";
    /// Set a scope's spend, next reset and (optionally) window period.
    pub(crate) const SET_SPEND: &str = "tollgate_v2_set_spend";
    /// Spend to 0 now, next reset on the server's clock.
    pub(crate) const RESET_SPEND: &str = "tollgate_v2_reset_spend";
    /// Arm or reschedule a budget window.
    pub(crate) const SET_WINDOW: &str = "tollgate_v2_set_window";
    /// Hand over the scopes changed since the last drain.
    pub(crate) const DRAIN: &str = "tollgate_v2_drain";
    /// The server's standardised budget reset for a duration and an instant.
    pub(crate) const NEXT_RESET: &str = "tollgate_v2_next_reset";
}

/// True when `err` says the function (or its library) is not loaded on the server that
/// answered: `ERR Function not found` (Redis 7 `FCALL`), or a `NOSCRIPT` code. That happens
/// after `FUNCTION FLUSH`, on a fresh server, or after a failover to a replica that never
/// received the library; the client then loads it and retries once.
pub(crate) fn is_missing(err: &redis::RedisError) -> bool {
    if err.code() == Some("NOSCRIPT") {
        return true;
    }
    let text = err.to_string();
    text.contains("Function not found") || text.contains("NOSCRIPT")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_names_the_library_and_every_function_carries_the_version() {
        let first = SOURCE.lines().next().unwrap_or_default();
        assert_eq!(first, format!("#!lua name={LIBRARY_NAME}"));
        for f in [
            function::RESERVE,
            function::SETTLE,
            function::RELEASE,
            function::BATCH,
            function::SEED_ABSENT,
            function::SET_SPEND,
            function::RESET_SPEND,
            function::SET_WINDOW,
            function::DRAIN,
            function::NEXT_RESET,
        ] {
            assert!(f.starts_with(&format!("{LIBRARY_NAME}_")), "{f}");
            assert!(SOURCE.contains(&format!("'{f}'")), "{f} is registered");
        }
    }
}
