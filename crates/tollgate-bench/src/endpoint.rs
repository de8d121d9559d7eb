//! Target endpoints and the one-keep-alive-connection-per-worker client.
//!
//! Connections are made with `hyper::client::conn::http1::handshake` over a
//! `TcpStream` with `TCP_NODELAY` on, so the driver adds no pooling logic of
//! its own and every worker owns exactly one HTTP/1.1 keep-alive connection.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::BenchError;

/// A resolved `http://host:port[/prefix]` base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Socket address the driver connects to.
    pub addr: SocketAddr,
    /// Value of the `Host` header (`host:port` as written in the URL).
    pub authority: String,
    /// Path prefix without trailing slash (`""` for the root).
    pub prefix: String,
}

impl Endpoint {
    /// Parses and resolves a plain-HTTP base URL such as `http://127.0.0.1:8080`
    /// or `http://localhost:4000/api`.
    ///
    /// Errors: [`BenchError::InvalidUrl`] for a non-`http` scheme, a missing
    /// port or a host that does not resolve.
    pub async fn parse(url: &str) -> Result<Self, BenchError> {
        let invalid = |reason| BenchError::InvalidUrl {
            url: url.to_string(),
            reason,
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| invalid("only http:// is supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(invalid("missing host"));
        }
        let with_port = if authority
            .rsplit_once(':')
            .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            authority.to_string()
        } else {
            format!("{authority}:80")
        };
        let addr = tokio::net::lookup_host(with_port.as_str())
            .await
            .map_err(|_| invalid("host does not resolve"))?
            .next()
            .ok_or_else(|| invalid("host does not resolve"))?;
        Ok(Endpoint {
            addr,
            authority: authority.to_string(),
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// Opens one keep-alive HTTP/1.1 connection (TCP_NODELAY on) and spawns
    /// its connection task on the current runtime.
    pub async fn connect(&self) -> std::io::Result<SendRequest<Full<Bytes>>> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            // The connection ends when the worker drops its sender or the peer closes.
            let _ = conn.await;
        });
        Ok(sender)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn parses_host_port_and_prefix() {
        let e = Endpoint::parse("http://127.0.0.1:4000/api/").await.unwrap();
        assert_eq!(e.addr, "127.0.0.1:4000".parse().unwrap());
        assert_eq!(e.authority, "127.0.0.1:4000");
        assert_eq!(e.prefix, "/api");
        let e = Endpoint::parse("http://127.0.0.1:9").await.unwrap();
        assert_eq!(e.prefix, "");
    }

    #[tokio::test]
    async fn refuses_https_and_empty_host() {
        assert!(Endpoint::parse("https://127.0.0.1:1").await.is_err());
        assert!(Endpoint::parse("http:///v1").await.is_err());
    }
}
