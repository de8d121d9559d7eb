//! Redis commands a gateway sent during a run, from the Redis server's own counters
//! (`INFO commandstats`: one `cmdstat_<name>:calls=<n>,usec=...` line per command; Redis
//! documentation, "INFO"), read before and after the run.

use std::collections::BTreeMap;

use serde::Serialize;

/// Commands the gateway sent per completed request during one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RedisUsage {
    /// All commands (every name but the harness's own `info`), per completed request.
    pub commands_per_request: f64,
    /// The same, by command name (`fcall`, `publish`, `hincrby`...).
    pub by_command: BTreeMap<String, f64>,
}

/// `calls` of every command in an `INFO commandstats` reply, by lower-case name.
pub fn parse_commandstats(info: &str) -> BTreeMap<String, u64> {
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|f| f.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_ascii_lowercase(), calls))
        })
        .collect()
}

/// Reads the server's command counters.
///
/// Errors: the server cannot be reached or does not answer `INFO`.
pub async fn command_calls(url: &str) -> Result<BTreeMap<String, u64>, String> {
    let client = redis::Client::open(url).map_err(|e| format!("redis {url}: {e}"))?;
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("redis {url}: {e}"))?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .map_err(|e| format!("redis {url}: INFO: {e}"))?;
    Ok(parse_commandstats(&info))
}

/// The commands between two readings, per `requests` (the harness's own `INFO` calls left
/// out). `None` without requests.
pub fn usage(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    requests: u64,
) -> Option<RedisUsage> {
    if requests == 0 {
        return None;
    }
    let mut by_command = BTreeMap::new();
    let mut total = 0u64;
    for (name, &n) in after {
        if name == "info" {
            continue;
        }
        let d = n.saturating_sub(before.get(name).copied().unwrap_or(0));
        if d > 0 {
            total += d;
            by_command.insert(name.clone(), d as f64 / requests as f64);
        }
    }
    Some(RedisUsage {
        commands_per_request: total as f64 / requests as f64,
        by_command,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Commandstats\r\n\
        cmdstat_fcall:calls=2000,usec=240000,usec_per_call=120.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_info:calls=7,usec=300,usec_per_call=42.86,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_publish:calls=3,usec=9,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn reads_calls_by_command() {
        let m = parse_commandstats(INFO);
        assert_eq!(m.get("fcall"), Some(&2000));
        assert_eq!(m.get("info"), Some(&7));
        assert_eq!(m.len(), 3);
    }

    #[test]
    fn usage_is_the_difference_per_request_without_info() {
        let before =
            parse_commandstats("cmdstat_fcall:calls=1000,usec=1\r\ncmdstat_info:calls=6,usec=1");
        let after = parse_commandstats(INFO);
        let u = usage(&before, &after, 500).unwrap();
        assert_eq!(u.commands_per_request, (1000.0 + 3.0) / 500.0);
        assert_eq!(u.by_command.get("fcall"), Some(&2.0));
        assert_eq!(u.by_command.get("publish"), Some(&0.006));
        assert!(!u.by_command.contains_key("info"));
        assert_eq!(usage(&before, &after, 0), None);
    }
}
