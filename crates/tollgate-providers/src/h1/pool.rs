//! Idle upstream connections kept for reuse, per `host:port`.
//!
//! A connection is put back only after its response body was read to the end with nothing
//! left over, and it holds no buffer while idle (a TCP socket and a timestamp). The most
//! recently used one is taken first (warm, least likely closed by the peer). Before reuse a
//! connection is checked without a syscall unless the runtime saw it readable: one the peer
//! closed (or that has stray bytes) is dropped. Connections idle for [`IDLE_TIMEOUT`] are
//! dropped on the next take and by a sweep every [`SWEEP_EVERY`] on the runtime that first
//! returned one.
//!
//! Hosts are keyed by the authority's text as written in the deployment's base URL, hashed
//! with FxHash: `http::uri::Authority`'s own `Hash` feeds SipHash one lowercased byte at a
//! time, which cost ~900 instructions per lookup, twice per request (callgrind). The keys
//! come from configuration, never from a client, so a non-keyed hash is safe here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use http::uri::Authority;
use tokio::net::TcpStream;

/// How long an idle connection is kept: most providers and servers close theirs after
/// 60–120 s of silence (hyper-util's client default is 90 s too).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The most idle connections kept per `host:port`.
pub(crate) const MAX_IDLE_PER_HOST: usize = 1024;
/// How often idle connections past [`IDLE_TIMEOUT`] are closed when none is taken.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Idle {
    stream: TcpStream,
    since: Instant,
}

/// Idle connections by authority text (`host:port`).
type IdleMap = HashMap<Box<str>, Vec<Idle>, rustc_hash::FxBuildHasher>;

#[derive(Debug, Default)]
struct Inner {
    idle: Mutex<IdleMap>,
    sweeping: AtomicBool,
}

/// The idle connections of one shard; clones share them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool(Arc<Inner>);

impl Pool {
    /// A live idle connection to `authority`, if one is kept.
    pub(crate) fn take(&self, authority: &Authority) -> Option<TcpStream> {
        loop {
            let idle = {
                let mut map = self.0.idle.lock().ok()?;
                let list = map.get_mut(authority.as_str())?;
                let idle = list.pop()?;
                if idle.since.elapsed() >= IDLE_TIMEOUT {
                    // Older ones sit below it: all expired.
                    list.clear();
                    return None;
                }
                idle
            };
            if is_reusable(&idle.stream) {
                return Some(idle.stream);
            }
        }
    }

    /// Keeps `stream` for the next request to `authority` (closes it when
    /// [`MAX_IDLE_PER_HOST`] are already kept).
    pub(crate) fn put(&self, authority: Authority, stream: TcpStream) {
        let Ok(mut map) = self.0.idle.lock() else {
            return;
        };
        let idle = Idle {
            stream,
            since: Instant::now(),
        };
        match map.get_mut(authority.as_str()) {
            Some(list) if list.len() < MAX_IDLE_PER_HOST => list.push(idle),
            Some(_) => {}
            None => {
                map.insert(authority.as_str().into(), vec![idle]);
            }
        }
        drop(map);
        if !self.0.sweeping.swap(true, Ordering::Relaxed) {
            self.start_sweeping();
        }
    }

    /// How many idle connections are kept for `authority`.
    #[cfg(test)]
    pub(crate) fn idle_count(&self, authority: &Authority) -> usize {
        self.0
            .idle
            .lock()
            .map(|m| m.get(authority.as_str()).map_or(0, Vec::len))
            .unwrap_or(0)
    }

    /// Closes expired connections every [`SWEEP_EVERY`] until the pool is dropped.
    fn start_sweeping(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.0.sweeping.store(false, Ordering::Relaxed);
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.0);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(SWEEP_EVERY).await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                if let Ok(mut map) = inner.idle.lock() {
                    sweep(&mut map);
                }
            }
        });
    }
}

/// Drops expired connections and hosts left without any.
fn sweep(map: &mut IdleMap) {
    map.retain(|_, list| {
        list.retain(|i| i.since.elapsed() < IDLE_TIMEOUT);
        !list.is_empty()
    });
}

/// Whether an idle connection can carry a request: not closed by the peer and with no
/// unsolicited bytes waiting. `try_read` answers from the runtime's readiness state without
/// a syscall when nothing arrived since the last read.
fn is_reusable(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(stream.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn pair(listener: &tokio::net::TcpListener) -> (TcpStream, TcpStream) {
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, server)
    }

    #[tokio::test]
    async fn the_last_returned_live_connection_is_taken_first() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host: Authority = listener.local_addr().unwrap().to_string().parse().unwrap();
        let pool = Pool::default();
        let (a, _sa) = pair(&listener).await;
        let (b, _sb) = pair(&listener).await;
        let b_port = b.local_addr().unwrap().port();
        pool.put(host.clone(), a);
        pool.put(host.clone(), b);
        assert_eq!(pool.idle_count(&host), 2);
        let first = pool.take(&host).unwrap();
        assert_eq!(first.local_addr().unwrap().port(), b_port);
        assert!(pool.take(&host).is_some());
        assert!(pool.take(&host).is_none());
        let other: Authority = "127.0.0.1:1".parse().unwrap();
        assert!(pool.take(&other).is_none());
    }

    #[tokio::test]
    async fn closed_or_chatty_connections_are_not_reused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host: Authority = listener.local_addr().unwrap().to_string().parse().unwrap();
        let pool = Pool::default();
        let (closed, server_closed) = pair(&listener).await;
        let (chatty, mut server_chatty) = pair(&listener).await;
        pool.put(host.clone(), closed);
        pool.put(host.clone(), chatty);
        drop(server_closed);
        server_chatty
            .write_all(b"HTTP/1.1 408 \r\n\r\n")
            .await
            .unwrap();
        // Let the runtime see both sockets become readable.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(pool.take(&host).is_none());
        assert_eq!(pool.idle_count(&host), 0);
    }

    #[test]
    fn the_sweep_drops_expired_connections_and_empty_hosts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let (a, _sa) = pair(&listener).await;
            let (b, _sb) = pair(&listener).await;
            let old: Authority = "old:80".parse().unwrap();
            let fresh: Authority = "fresh:80".parse().unwrap();
            let Some(expired) = Instant::now().checked_sub(IDLE_TIMEOUT) else {
                return; // a clock this close to its epoch cannot express an old connection
            };
            let mut map = IdleMap::from_iter([
                (
                    Box::from(old.as_str()),
                    vec![Idle {
                        stream: a,
                        since: expired,
                    }],
                ),
                (
                    Box::from(fresh.as_str()),
                    vec![Idle {
                        stream: b,
                        since: Instant::now(),
                    }],
                ),
            ]);
            sweep(&mut map);
            assert!(!map.contains_key(old.as_str()));
            assert_eq!(map[fresh.as_str()].len(), 1);
        });
    }
}
