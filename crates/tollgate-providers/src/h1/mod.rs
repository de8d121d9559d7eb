//! Tollgate's own HTTP/1.1 client for plain `http://` upstreams: self-hosted model servers,
//! in-cluster proxies, the mock.
//!
//! The exchange runs in the task of the request that needs it: the request is written, the
//! response head read and the body streamed by that task, and the connection goes back to a
//! pool of idle sockets when the body ends. hyper's client instead drives each connection in
//! a task of its own and hands requests and responses across a channel: a task wake-up per
//! hand-off (a futex call when the two tasks sit on different worker threads), a dispatch
//! channel and a connection future per connection (~34 KB at rest), measured in
//! bench/README.md (2026-11-30). `https://` upstreams keep hyper-util's client (TLS and
//! HTTP/2 by ALPN).
//!
//! The wire rules followed are RFC 9112's: the head (§3, §4), the body's framing (§6.3), the
//! chunked coding (§7.1) and persistence (§9.3: HTTP/1.1 keeps the connection unless either
//! side says `close`; an HTTP/1.0 response closes it).

mod body;
mod chunked;
mod exchange;
mod head;
mod names;
mod pool;

pub(crate) use body::Body;
#[cfg(test)]
pub(crate) use body::BodyError;
pub(crate) use exchange::{ExchangeError, Outgoing, send};
#[cfg(test)]
pub(crate) use head::Head;
pub(crate) use pool::Pool;

#[cfg(test)]
mod tests;
