//! The resolver of the pool that calls client-chosen `https://` hosts: it answers only with
//! the addresses [`crate::egress::check_base`] resolved and checked for the request, so no
//! connection goes to an address that was not checked (a rebinding DNS server could answer a
//! second lookup with another one).

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;

/// hyper-util's pool for client-chosen `https://` hosts: its resolver answers only from
/// [`PinnedDns`].
pub(crate) type ChosenPool = Client<HttpsConnector<HttpConnector<PinnedDns>>, Full<Bytes>>;

/// The addresses of client-chosen hosts as [`crate::egress::check_base`] resolved and checked
/// them, by host. The chosen TLS pool's resolver reads them here and never asks a DNS server,
/// so a connection goes to a checked address even when the name would now resolve elsewhere.
#[derive(Debug, Clone, Default)]
pub(crate) struct PinnedDns(
    Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<[std::net::SocketAddr]>>>>,
);

impl PinnedDns {
    /// Hosts kept at most; past it the table starts again (an entry is only needed between
    /// its check and the connect that follows).
    const MAX: usize = 4096;

    pub(crate) fn pin(&self, host: &str, addrs: &Arc<[std::net::SocketAddr]>) {
        if let Ok(mut m) = self.0.lock() {
            if m.len() >= Self::MAX && !m.contains_key(host) {
                m.clear();
            }
            m.insert(host.to_owned(), Arc::clone(addrs));
        }
    }
}

impl tower_service::Service<hyper_util::client::legacy::connect::dns::Name> for PinnedDns {
    type Response = std::vec::IntoIter<std::net::SocketAddr>;
    type Error = std::io::Error;
    type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: hyper_util::client::legacy::connect::dns::Name) -> Self::Future {
        let found = self
            .0
            .lock()
            .ok()
            .and_then(|m| m.get(name.as_str()).map(|a| a.to_vec()));
        std::future::ready(found.map(Vec::into_iter).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the host was not checked for this request",
            )
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_service::Service;

    #[tokio::test]
    async fn only_pinned_hosts_resolve() {
        let mut dns = PinnedDns::default();
        let addrs: Arc<[std::net::SocketAddr]> = vec!["93.184.216.34:0".parse().unwrap()].into();
        dns.pin("byok.example.com", &addrs);
        let name = |s: &str| {
            s.parse::<hyper_util::client::legacy::connect::dns::Name>()
                .unwrap()
        };
        let got: Vec<_> = dns.call(name("byok.example.com")).await.unwrap().collect();
        assert_eq!(got, addrs.to_vec());
        let e = dns.call(name("other.example.com")).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
