//! The TCP settings of every connection Tollgate opens to Redis.
//!
//! redis-rs leaves `TCP_NODELAY` off unless asked (`redis::io::tcp::TcpSettings`, default
//! `nodelay: false`). With Nagle's algorithm on (RFC 896), a command written while an earlier
//! one on the same connection is still unacknowledged may wait in the kernel for that
//! acknowledgement; every request of a replica shares one multiplexed connection, so a
//! reservation would wait on another request's reply. Redis sets `TCP_NODELAY` on its side of
//! every connection; this module sets it on ours, as most Redis clients do by default. On
//! loopback it did not change the governed sweep measurably (`bench/README.md`, 2026-12-03:
//! the reply usually carries the acknowledgement at once); across a network, with delayed
//! acknowledgements, it is what keeps a pipelined write from waiting for them.

use redis::io::tcp::TcpSettings;
use redis::{Client, IntoConnectionInfo, RedisResult};

/// `TCP_NODELAY` on, everything else as redis-rs's defaults.
pub fn tcp_settings() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// A client for `url` (`redis://`, `rediss://`, `unix://`) whose connections use
/// [`tcp_settings`].
///
/// # Errors
/// An unreadable URL, as [`redis::Client::open`].
pub fn client(url: &str) -> RedisResult<Client> {
    let info = url.into_connection_info()?.set_tcp_settings(tcp_settings());
    Client::open(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_ask_for_no_delay() {
        let c = client("redis://127.0.0.1:6379/0").unwrap();
        assert!(c.get_connection_info().tcp_settings().nodelay());
        assert_eq!(c.get_connection_info().addr().to_string(), "127.0.0.1:6379");
        assert!(client("not a url").is_err());
    }
}
