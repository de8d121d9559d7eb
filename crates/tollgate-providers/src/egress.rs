//! Upstream hosts a client chose (`api_base` / `base_url` in a request body, where the
//! deployment allows it): which ones the gateway may call, and the addresses it connects to.
//!
//! A client-chosen base URL is checked once, before anything is sent:
//!
//! 1. it is an absolute `https://` URL with a host and no `user:password@` part (`http://`
//!    only where the deployment's own rule says so);
//! 2. its host is not a name for the gateway's own machine or a cloud metadata service
//!    (`localhost`, `*.localhost`, `metadata.google.internal`, `metadata.goog`, `metadata`);
//! 3. the host is resolved **once** ([`Resolve`]) and **every** address is checked: none may be
//!    unspecified, loopback, private (RFC 1918, IPv6 unique-local), link-local, shared CGNAT
//!    space (RFC 6598), a cloud metadata address (`169.254.169.254`, `fd00:ec2::254`),
//!    multicast, or reserved; an IPv4 address embedded in IPv6 (`::ffff:a.b.c.d`, NAT64
//!    `64:ff9b::/96`, 6to4 `2002::/16`) is checked as that IPv4 address.
//!
//! The [`CheckedBase`] keeps the addresses, and the client connects to those and no others
//! (a second lookup could be answered differently by a rebinding DNS server). No redirect is
//! ever followed ([`crate::client`]). Why: a gateway that calls any host a client names can be
//! pointed at its own cloud's metadata service or internal network (server-side request
//! forgery), and would send the deployment's key there; LiteLLM refuses `api_base` in a body
//! unless the deployment opts in (`configurable_clientside_auth_params`) for the same reason.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http::Uri;
use ipnet::{Ipv4Net, Ipv6Net};

/// Resolves a host name to socket addresses: the system resolver in the gateway, a fixed table
/// in tests.
pub trait Resolve: Send + Sync {
    /// Every address of `host` with `port` set.
    ///
    /// Errors: the resolver's own (`NotFound` for a name without address).
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>>;
}

/// The system resolver (`getaddrinfo` on tokio's blocking pool).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Why a client-chosen base URL is refused. The messages never repeat the URL (its query may
/// carry a key) and are written to follow the field's name: "`api_base` {message}".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// Not an absolute `http(s)://host/...` URL.
    #[error("must be an absolute https:// URL with a host")]
    NotAUrl,
    /// `http://` where the deployment does not allow it, or another scheme.
    #[error(
        "must be an https:// URL: plain http:// is allowed for a client-chosen base only where an `allow_http: true` api_base pattern of this deployment's configurable_clientside_auth_params matches it"
    )]
    NotHttps,
    /// `https://user:password@host`.
    #[error("must not carry credentials in the URL (`user:password@`); send api_key instead")]
    UserInfo,
    /// A host name that always means this machine or a metadata service.
    #[error("names {host}, {kind}: the gateway never calls it for a client")]
    DeniedName {
        /// The host as written.
        host: String,
        /// What it names.
        kind: &'static str,
    },
    /// The host is, or resolves to, an address the gateway never calls for a client.
    #[error(
        "host {host} is or resolves to an address the gateway never calls for a client: {kind}"
    )]
    DeniedAddress {
        /// The host as written.
        host: String,
        /// The refused address.
        addr: IpAddr,
        /// Its class (`loopback`, `private (RFC 1918)`, ...).
        kind: &'static str,
    },
    /// The name did not resolve (in time).
    #[error("host {host} could not be resolved: {reason}")]
    Unresolved {
        /// The host as written.
        host: String,
        /// The resolver's error, or the time limit.
        reason: String,
    },
}

/// A client-chosen base URL that passed every check, with the addresses it resolved to: the
/// only ones a request to it connects to.
#[derive(Debug, Clone)]
pub struct CheckedBase {
    /// The URL as the client wrote it.
    pub(crate) url: String,
    /// The host as written in the URL (no brackets), the key the pinned addresses are found by.
    pub(crate) host: String,
    /// Every address the host resolved to (checked), with the URL's port.
    pub(crate) addrs: Arc<[SocketAddr]>,
}

impl CheckedBase {
    /// The URL as the client wrote it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The addresses a request to it may connect to.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// A base pinned to `addrs` without any check: for tests of the client, which must reach
    /// a local server that [`check_base`] would (rightly) refuse.
    #[doc(hidden)]
    pub fn unchecked_for_tests(url: &str, addrs: Vec<SocketAddr>) -> Option<CheckedBase> {
        let uri: Uri = url.parse().ok()?;
        Some(CheckedBase {
            url: url.to_owned(),
            host: uri.host()?.trim_matches(['[', ']']).to_owned(),
            addrs: addrs.into(),
        })
    }
}

/// Checks a client-chosen base URL (see the module docs): `allow_http` admits `http://`, and
/// the name lookup may take `lookup_limit` at most.
///
/// Errors: [`EgressError`], the first check that fails; a host given as an IP address, or a
/// refused name, fails without any lookup.
pub async fn check_base(
    url: &str,
    allow_http: bool,
    resolver: &dyn Resolve,
    lookup_limit: Duration,
) -> Result<CheckedBase, EgressError> {
    let uri: Uri = url.parse().map_err(|_| EgressError::NotAUrl)?;
    let port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") if allow_http => 80,
        Some(_) => return Err(EgressError::NotHttps),
        None => return Err(EgressError::NotAUrl),
    };
    let authority = uri.authority().ok_or(EgressError::NotAUrl)?;
    if authority.as_str().contains('@') {
        return Err(EgressError::UserInfo);
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(EgressError::NotAUrl);
    }
    let port = authority.port_u16().unwrap_or(port);
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => {
            if let Some(kind) = denied_name(host) {
                return Err(EgressError::DeniedName {
                    host: host.to_owned(),
                    kind,
                });
            }
            let unresolved = |reason: String| EgressError::Unresolved {
                host: host.to_owned(),
                reason,
            };
            match tokio::time::timeout(lookup_limit, resolver.resolve(host, port)).await {
                Err(_) => {
                    return Err(unresolved(format!(
                        "no answer within {} ms",
                        lookup_limit.as_millis()
                    )));
                }
                Ok(Err(e)) => return Err(unresolved(e.to_string())),
                Ok(Ok(a)) if a.is_empty() => return Err(unresolved("no address".into())),
                Ok(Ok(a)) => a,
            }
        }
    };
    for a in &addrs {
        if let Some(kind) = denied_kind(a.ip()) {
            return Err(EgressError::DeniedAddress {
                host: host.to_owned(),
                addr: a.ip(),
                kind,
            });
        }
    }
    Ok(CheckedBase {
        url: url.to_owned(),
        host: host.to_owned(),
        addrs: addrs.into(),
    })
}

/// What a refused host name names, if it is one: `localhost` and `*.localhost` (RFC 6761
/// §6.3) and the cloud metadata names (Google Cloud's `metadata.google.internal`,
/// `metadata.goog` and the short `metadata`). Case and a trailing dot do not matter.
pub fn denied_name(host: &str) -> Option<&'static str> {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    if h == "localhost" || h.ends_with(".localhost") {
        Some("this machine (localhost)")
    } else if matches!(
        h.as_str(),
        "metadata.google.internal" | "metadata.goog" | "metadata"
    ) {
        Some("a cloud metadata service")
    } else {
        None
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

/// Refused IPv4 networks, the most specific first (RFC 6890's special-purpose registry).
const DENIED_V4: &[(Ipv4Net, &str)] = &[
    (v4(169, 254, 169, 254, 32), "cloud metadata"),
    (v4(100, 100, 100, 200, 32), "cloud metadata"),
    (v4(0, 0, 0, 0, 8), "unspecified"),
    (v4(10, 0, 0, 0, 8), "private (RFC 1918)"),
    (v4(100, 64, 0, 0, 10), "shared (CGNAT, RFC 6598)"),
    (v4(127, 0, 0, 0, 8), "loopback"),
    (v4(169, 254, 0, 0, 16), "link-local"),
    (v4(172, 16, 0, 0, 12), "private (RFC 1918)"),
    (v4(192, 0, 0, 0, 24), "IETF protocol assignment"),
    (v4(192, 168, 0, 0, 16), "private (RFC 1918)"),
    (v4(198, 18, 0, 0, 15), "benchmarking (RFC 2544)"),
    (v4(224, 0, 0, 0, 4), "multicast"),
    (v4(240, 0, 0, 0, 4), "reserved"),
];

const fn v6(segments: [u16; 8], len: u8) -> Ipv6Net {
    let [a, b, c, d, e, f, g, h] = segments;
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)
}

/// Refused IPv6 networks, the most specific first.
const DENIED_V6: &[(Ipv6Net, &str)] = &[
    (v6([0, 0, 0, 0, 0, 0, 0, 0], 128), "unspecified"),
    (v6([0, 0, 0, 0, 0, 0, 0, 1], 128), "loopback"),
    (
        v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254], 128),
        "cloud metadata",
    ),
    (v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), "unique local (ULA)"),
    (v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), "link-local"),
    (v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), "site-local"),
    (v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), "multicast"),
];

/// The class of an address the gateway never calls for a client (see the module docs), or
/// `None` for a public one.
pub fn denied_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(a) => DENIED_V4
            .iter()
            .find(|(net, _)| net.contains(&a))
            .map(|(_, kind)| *kind),
        IpAddr::V6(a) => {
            if let Some((_, kind)) = DENIED_V6.iter().find(|(net, _)| net.contains(&a)) {
                return Some(kind);
            }
            embedded_v4(a).and_then(|v| denied_kind(IpAddr::V4(v)))
        }
    }
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible
/// (`::/96`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`).
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = a.segments();
    let low =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A resolver answering from a table, counting the lookups it was asked for.
    #[derive(Default)]
    struct Table {
        names: HashMap<&'static str, Vec<IpAddr>>,
        asked: Mutex<Vec<String>>,
    }

    impl Table {
        fn with(names: &[(&'static str, &[&str])]) -> Table {
            Table {
                names: names
                    .iter()
                    .map(|(n, ips)| (*n, ips.iter().map(|i| i.parse().unwrap()).collect()))
                    .collect(),
                asked: Mutex::default(),
            }
        }
        fn asked(&self) -> Vec<String> {
            self.asked.lock().unwrap().clone()
        }
    }

    impl Resolve for Table {
        fn resolve<'a>(
            &'a self,
            host: &'a str,
            port: u16,
        ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>> {
            self.asked.lock().unwrap().push(host.to_owned());
            let found = self.names.get(host).map(|ips| {
                ips.iter()
                    .map(|ip| SocketAddr::new(*ip, port))
                    .collect::<Vec<_>>()
            });
            Box::pin(async move {
                found.ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such host")
                })
            })
        }
    }

    const LIMIT: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn a_public_https_host_passes_with_every_address_pinned() {
        let dns = Table::with(&[(
            "api.example.com",
            &["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        )]);
        let b = check_base("https://api.example.com/v1", false, &dns, LIMIT)
            .await
            .unwrap();
        assert_eq!(b.url(), "https://api.example.com/v1");
        assert_eq!(
            b.addrs(),
            [
                "93.184.216.34:443".parse().unwrap(),
                "[2606:2800:220:1:248:1893:25c8:1946]:443".parse().unwrap()
            ]
        );
        assert_eq!(dns.asked(), ["api.example.com"]);
        // An explicit port is kept; an IP host needs no lookup.
        let b = check_base("https://93.184.216.34:8443/v1", false, &dns, LIMIT)
            .await
            .unwrap();
        assert_eq!(b.addrs(), ["93.184.216.34:8443".parse().unwrap()]);
        assert_eq!(dns.asked().len(), 1);
    }

    #[tokio::test]
    async fn http_needs_the_deployment_s_leave() {
        let dns = Table::with(&[("gpu.example.com", &["93.184.216.34"])]);
        assert_eq!(
            check_base("http://gpu.example.com/v1", false, &dns, LIMIT)
                .await
                .unwrap_err(),
            EgressError::NotHttps
        );
        assert!(dns.asked().is_empty(), "refused before any lookup");
        let b = check_base("http://gpu.example.com/v1", true, &dns, LIMIT)
            .await
            .unwrap();
        assert_eq!(b.addrs(), ["93.184.216.34:80".parse().unwrap()]);
        for bad in [
            "ftp://gpu.example.com/",
            "file:///etc/passwd",
            "gpu.example.com/v1",
            "/v1",
            "https://",
        ] {
            assert!(check_base(bad, true, &dns, LIMIT).await.is_err(), "{bad}");
        }
        assert_eq!(
            check_base("https://u:p@gpu.example.com/", false, &dns, LIMIT)
                .await
                .unwrap_err(),
            EgressError::UserInfo
        );
    }

    #[tokio::test]
    async fn internal_addresses_are_refused_by_literal_and_by_name() {
        for (url, kind) in [
            ("https://127.0.0.1/v1", "loopback"),
            ("https://127.9.9.9:8443/v1", "loopback"),
            ("https://[::1]/v1", "loopback"),
            ("https://0.0.0.0/", "unspecified"),
            ("https://[::]/", "unspecified"),
            ("https://10.1.2.3/", "private (RFC 1918)"),
            ("https://172.16.0.1/", "private (RFC 1918)"),
            ("https://172.31.255.255/", "private (RFC 1918)"),
            ("https://192.168.1.1/", "private (RFC 1918)"),
            ("https://100.64.0.1/", "shared (CGNAT, RFC 6598)"),
            (
                "https://169.254.169.254/latest/meta-data/",
                "cloud metadata",
            ),
            ("https://169.254.1.1/", "link-local"),
            ("https://[fd00:ec2::254]/", "cloud metadata"),
            ("https://[fd12:3456::1]/", "unique local (ULA)"),
            ("https://[fe80::1]/", "link-local"),
            ("https://[::ffff:127.0.0.1]/", "loopback"),
            ("https://[::ffff:169.254.169.254]/", "cloud metadata"),
            ("https://[64:ff9b::10.0.0.1]/", "private (RFC 1918)"),
            ("https://[2002:c0a8:0101::1]/", "private (RFC 1918)"),
            ("https://224.0.0.1/", "multicast"),
            ("https://255.255.255.255/", "reserved"),
        ] {
            let dns = Table::default();
            match check_base(url, false, &dns, LIMIT).await {
                Err(EgressError::DeniedAddress { kind: k, .. }) => assert_eq!(k, kind, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
            assert!(dns.asked().is_empty(), "{url}: an IP host needs no lookup");
        }
        for host in [
            "localhost",
            "LOCALHOST.",
            "api.localhost",
            "metadata.google.internal",
            "metadata.google.internal.",
            "metadata",
        ] {
            let dns = Table::default();
            let e = check_base(&format!("https://{host}/"), false, &dns, LIMIT)
                .await
                .unwrap_err();
            assert!(matches!(e, EgressError::DeniedName { .. }), "{host}: {e:?}");
            assert!(dns.asked().is_empty(), "{host}");
        }
    }

    /// One refused address among public ones refuses the host: a rebinding DNS answer that
    /// mixes in 127.0.0.1 never gets a connection to any of them.
    #[tokio::test]
    async fn every_resolved_address_is_checked() {
        let dns = Table::with(&[
            ("rebind.example.com", &["93.184.216.34", "127.0.0.1"]),
            ("inside.example.com", &["10.0.0.7"]),
            ("v6inside.example.com", &["2606:2800:220:1::1", "fd00::1"]),
        ]);
        for (host, addr) in [
            ("rebind.example.com", "127.0.0.1"),
            ("inside.example.com", "10.0.0.7"),
            ("v6inside.example.com", "fd00::1"),
        ] {
            let e = check_base(&format!("https://{host}/v1"), false, &dns, LIMIT)
                .await
                .unwrap_err();
            let addr: IpAddr = addr.parse().unwrap();
            let kind = denied_kind(addr).unwrap();
            assert_eq!(
                e,
                EgressError::DeniedAddress {
                    host: host.to_owned(),
                    addr,
                    kind
                }
            );
            // The message names the class, not the address (no DNS oracle for clients).
            assert_eq!(
                e.to_string(),
                format!(
                    "host {host} is or resolves to an address the gateway never calls for a client: {kind}"
                )
            );
        }
        let e = check_base("https://nowhere.example.com/", false, &dns, LIMIT)
            .await
            .unwrap_err();
        assert!(matches!(e, EgressError::Unresolved { .. }), "{e:?}");
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "169.253.0.1",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(denied_kind(ip.parse().unwrap()), None, "{ip}");
        }
    }
}
