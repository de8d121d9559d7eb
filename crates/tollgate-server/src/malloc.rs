//! How many glibc malloc arenas the process may use.
//!
//! glibc gives each thread that meets a locked arena a new one, up to 8 per core
//! (`mallopt(3)`, `M_ARENA_MAX`). Each arena keeps its own free lists and its own unused top,
//! so every one a serving thread holds adds its own share of freed-but-kept memory: on 2 cores
//! at 64 concurrent requests the two workers' arenas held 1.2–1.7 MB more than one shared
//! arena, with the same CPU per request (bench/README.md, 2026-11-30). Most of a request's
//! allocations are small and served by glibc's per-thread cache without taking the arena
//! lock, so one arena per four serving threads keeps contention low while the footprint stays
//! that of one arena on small machines.
//!
//! `MALLOC_ARENA_MAX` in the environment wins (glibc reads it itself); other allocators and
//! platforms are left alone.

/// Arenas for `serving_threads` threads: one per four, at least one.
pub fn arena_limit(serving_threads: usize) -> usize {
    serving_threads.div_ceil(4).max(1)
}

/// Caps the arenas at [`arena_limit`]`(serving_threads)` unless `MALLOC_ARENA_MAX` is set.
/// Call before the serving threads start. Returns the cap set, `None` when it was left alone
/// (environment override, not glibc, or `mallopt` refused).
pub fn limit_arenas(serving_threads: usize) -> Option<usize> {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return None;
    }
    set_arena_max(arena_limit(serving_threads))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(n: usize) -> Option<usize> {
    let value = libc::c_int::try_from(n).ok()?;
    // SAFETY: mallopt only changes a malloc tunable; M_ARENA_MAX takes any positive count.
    let ok = unsafe { libc::mallopt(libc::M_ARENA_MAX, value) };
    (ok == 1).then_some(n)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_n: usize) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_arena_per_four_serving_threads() {
        assert_eq!(arena_limit(0), 1);
        assert_eq!(arena_limit(1), 1);
        assert_eq!(arena_limit(2), 1);
        assert_eq!(arena_limit(4), 1);
        assert_eq!(arena_limit(5), 2);
        assert_eq!(arena_limit(8), 2);
        assert_eq!(arena_limit(64), 16);
    }
}
