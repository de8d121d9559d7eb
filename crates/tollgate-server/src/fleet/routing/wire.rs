//! What the routing sync sends and reads: key names, the arguments of the library's `sync`
//! function, its reply, and the cooldown message. Pure functions over [`FleetState`].

use tollgate_router::FleetState;
use tollgate_router::state::{FleetUsage, UsageReport};

/// The Lua function library (`library.lua`), loaded with `FUNCTION LOAD REPLACE`.
pub(super) const LIBRARY: &str = include_str!("library.lua");
/// The library's name (its source's first line): the version is part of it and of each
/// function's name, so replicas of two releases run their own code side by side during a
/// rolling deploy.
#[cfg(test)]
pub(super) const LIBRARY_NAME: &str = "tollgate_route_v1";
/// Sends usage deltas and in-flight counts, reads the fleet's totals and running cooldowns.
pub(super) const FN_SYNC: &str = "tollgate_route_v1_sync";
/// Records a cooldown deadline (the later wins).
pub(super) const FN_COOLDOWN: &str = "tollgate_route_v1_cooldown";

/// The keys of one fleet (`prefix`): every one carries the hash tag `{prefix}`, so a Redis
/// Cluster keeps them in one slot and one function call can touch them all.
#[derive(Debug, Clone)]
pub(super) struct Keys {
    tag: String,
    /// The pub/sub channel of cooldowns: `<prefix>:cooldowns`.
    pub(super) channel: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        // The settings' default (`TOLLGATE_REDIS_KEY_PREFIX` unset or empty).
        let prefix = if prefix.is_empty() {
            "tollgate"
        } else {
            prefix
        };
        Keys {
            tag: format!("{{{prefix}}}:route"),
            channel: format!("{prefix}:cooldowns"),
        }
    }

    /// `KEYS` of the sync for Unix minute `minute`: usage, in flight, replicas, cooldowns.
    pub(super) fn sync(&self, minute: u64) -> [String; 4] {
        [
            format!("{}:use:{minute}", self.tag),
            format!("{}:busy", self.tag),
            format!("{}:seen", self.tag),
            self.cooldowns(),
        ]
    }

    /// The sorted set of cooldown deadlines.
    pub(super) fn cooldowns(&self) -> String {
        format!("{}:cool", self.tag)
    }
}

/// Whether an id can travel in the packed in-flight value (`id\tcount\n`).
fn packable(id: &str) -> bool {
    !id.is_empty() && !id.contains(['\t', '\n'])
}

/// `ARGV` of the sync: `replica`, expiries (ms), the caller's Unix ms, its packed in-flight
/// counts, then (id, requests delta, tokens delta) for each report with a delta.
pub(super) fn sync_args(
    replica: &str,
    ttl: Ttls,
    now_ms: u64,
    reports: &[UsageReport],
    fleet: &FleetState,
) -> Vec<String> {
    let mut packed = String::new();
    let mut args = vec![
        replica.to_owned(),
        ttl.usage_ms.to_string(),
        ttl.replica_ms.to_string(),
        now_ms.to_string(),
    ];
    let mut triples = Vec::with_capacity(reports.len() * 3);
    for r in reports {
        let Some(id) = fleet.id(r.slot).filter(|id| packable(id)) else {
            continue;
        };
        if r.in_flight > 0 {
            packed.push_str(id);
            packed.push('\t');
            packed.push_str(&r.in_flight.to_string());
            packed.push('\n');
        }
        if r.rpm_delta != 0 || r.tpm_delta != 0 {
            triples.push(id.to_owned());
            triples.push(r.rpm_delta.to_string());
            triples.push(r.tpm_delta.to_string());
        }
    }
    args.push(packed);
    args.extend(triples);
    args
}

/// Expiries the sync asks for, ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ttls {
    /// Of a minute's usage hash (it is read for one minute only).
    pub(super) usage_ms: u64,
    /// Of a replica that stopped syncing: its in-flight counts no longer count after it.
    pub(super) replica_ms: u64,
}

/// The sync's reply: the minute's usage hash (flat field, value list), the others' in-flight
/// counts (id, count), the running cooldowns (id, deadline ms).
pub(super) type SyncReply = (Vec<String>, Vec<String>, Vec<String>);

/// The fleet's numbers for every slot of `fleet` (missing: 0) and the running cooldowns
/// (slot, deadline Unix ms), from `reply`. Ids this replica does not route are skipped, and so
/// are values that are not numbers.
pub(super) fn parse_sync(
    reply: &SyncReply,
    fleet: &FleetState,
) -> (Vec<FleetUsage>, Vec<(usize, u64)>) {
    let mut usage: Vec<FleetUsage> = (0..tollgate_router::RouterState::slots(fleet))
        .map(|slot| FleetUsage {
            slot,
            ..FleetUsage::default()
        })
        .collect();
    let (hash, busy, cool) = reply;
    for pair in hash.chunks_exact(2) {
        let (field, value) = (&pair[0], &pair[1]);
        let Ok(n) = value.parse::<i64>() else {
            continue;
        };
        let n = u64::try_from(n).unwrap_or(0);
        let (kind, id) = field.split_at(field.len().min(1));
        let Some(u) = fleet.slot_of(id).and_then(|s| usage.get_mut(s)) else {
            continue;
        };
        match kind {
            "r" => u.rpm_total = n,
            "t" => u.tpm_total = n,
            _ => {}
        }
    }
    for pair in busy.chunks_exact(2) {
        if let (Some(u), Ok(n)) = (
            fleet.slot_of(&pair[0]).and_then(|s| usage.get_mut(s)),
            pair[1].parse::<u32>(),
        ) {
            u.in_flight_others = n;
        }
    }
    let cooldowns = cool
        .chunks_exact(2)
        .filter_map(|pair| {
            let slot = fleet.slot_of(&pair[0])?;
            let ms = pair[1].parse::<f64>().ok()?;
            (ms.is_finite() && ms > 0.0).then_some((slot, ms as u64))
        })
        .collect();
    (usage, cooldowns)
}

/// The cooldown message: `<deadline Unix ms> <replica> <deployment id>` (the id last: it may
/// hold spaces).
pub(super) fn cooldown_message(until_ms: u64, replica: &str, id: &str) -> String {
    format!("{until_ms} {replica} {id}")
}

/// A cooldown message's deadline (Unix ms), replica and deployment id.
pub(super) fn parse_cooldown_message(text: &str) -> Option<(u64, &str, &str)> {
    let (ms, rest) = text.split_once(' ')?;
    let (replica, id) = rest.split_once(' ')?;
    Some((ms.parse().ok()?, replica, id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tollgate_router::RouterState;
    use tollgate_router::state::WallClock;

    fn fleet() -> FleetState {
        let ids = ["east".to_owned(), "west".to_owned(), "bad\tid".to_owned()];
        FleetState::new(&ids, WallClock::at(Instant::now(), 1_764_669_630_000))
    }

    #[test]
    fn the_library_is_named_and_versioned() {
        let first = LIBRARY.lines().next().unwrap_or_default();
        assert_eq!(first, format!("#!lua name={LIBRARY_NAME}"));
        for f in [FN_SYNC, FN_COOLDOWN] {
            assert!(f.starts_with(&format!("{LIBRARY_NAME}_")), "{f}");
            assert!(LIBRARY.contains(&format!("'{f}'")), "{f} is registered");
        }
    }

    #[test]
    fn keys_share_one_hash_tag() {
        let k = Keys::new("fleet-a");
        assert_eq!(
            k.sync(29_411_160),
            [
                "{fleet-a}:route:use:29411160".to_owned(),
                "{fleet-a}:route:busy".to_owned(),
                "{fleet-a}:route:seen".to_owned(),
                "{fleet-a}:route:cool".to_owned(),
            ]
        );
        assert_eq!(k.channel, "fleet-a:cooldowns");
        assert_eq!(Keys::new("").channel, "tollgate:cooldowns");
    }

    #[test]
    fn sync_args_pack_in_flight_and_list_deltas() {
        let f = fleet();
        let reports = [
            UsageReport {
                slot: 0,
                rpm_delta: 2,
                tpm_delta: -40,
                in_flight: 3,
            },
            UsageReport {
                slot: 1,
                rpm_delta: 0,
                tpm_delta: 0,
                in_flight: 1,
            },
            UsageReport {
                slot: 2,
                rpm_delta: 5,
                tpm_delta: 5,
                in_flight: 5,
            },
        ];
        let ttl = Ttls {
            usage_ms: 120_000,
            replica_ms: 3_000,
        };
        let args = sync_args("r1", ttl, 1_764_669_630_123, &reports, &f);
        assert_eq!(
            args,
            [
                "r1",
                "120000",
                "3000",
                "1764669630123",
                "east\t3\nwest\t1\n",
                "east",
                "2",
                "-40"
            ]
        );
    }

    #[test]
    fn the_reply_maps_ids_to_slots() {
        let f = fleet();
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let reply = (
            s(&[
                "reast", "7", "teast", "1150", "twest", "10", "rgone", "3", "rwest", "x",
            ]),
            s(&["west", "4", "gone", "1"]),
            s(&["east", "1764669633000", "gone", "1764669639000"]),
        );
        let (usage, cool) = parse_sync(&reply, &f);
        assert_eq!(usage.len(), f.slots());
        assert_eq!(
            (
                usage[0].rpm_total,
                usage[0].tpm_total,
                usage[0].in_flight_others
            ),
            (7, 1150, 0)
        );
        assert_eq!(
            (
                usage[1].rpm_total,
                usage[1].tpm_total,
                usage[1].in_flight_others
            ),
            (0, 10, 4)
        );
        assert_eq!(
            usage[2],
            FleetUsage {
                slot: 2,
                ..FleetUsage::default()
            }
        );
        assert_eq!(cool, vec![(0, 1_764_669_633_000)]);
    }

    #[test]
    fn cooldown_messages_round_trip() {
        let m = cooldown_message(1_764_669_633_000, "ab12", "my deployment");
        assert_eq!(m, "1764669633000 ab12 my deployment");
        assert_eq!(
            parse_cooldown_message(&m),
            Some((1_764_669_633_000, "ab12", "my deployment"))
        );
        assert_eq!(parse_cooldown_message("soon r1 east"), None);
        assert_eq!(parse_cooldown_message("1764669633000 r1"), None);
    }
}
