//! Tests of the upstream client: pool choice, URL caching, shards, `fetch`, and calls to
//! client-chosen hosts (pinned addresses, no redirect followed).

use super::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[test]
fn a_missing_connect_timeout_uses_the_nearest_longer_client() {
    let s = Duration::from_secs;
    let m = BTreeMap::from([(s(1), "1s"), (s(5), "5s")]);
    assert_eq!(pick(&m, s(1)), Some(&"1s"));
    assert_eq!(pick(&m, Duration::from_millis(300)), Some(&"1s"));
    assert_eq!(pick(&m, s(2)), Some(&"5s"));
    assert_eq!(pick(&m, s(9)), Some(&"5s"));
    assert_eq!(pick(&BTreeMap::<Duration, u8>::new(), s(1)), None);
}

#[test]
fn endpoint_urls_parse_once_per_path_and_stay_bounded() {
    let urls = EndpointUrls::default();
    let base = "http://127.0.0.1:9/v1";
    let a = urls.get(base, "/chat/completions").unwrap();
    assert_eq!(a.to_string(), "http://127.0.0.1:9/v1/chat/completions");
    assert_eq!(urls.get(base, "/chat/completions").unwrap(), a);
    assert_eq!(urls.0.read().unwrap().len(), 1);
    for i in 0..20 {
        let u = urls.get(base, &format!("/responses/resp_{i}")).unwrap();
        assert_eq!(u.path(), format!("/v1/responses/resp_{i}"));
    }
    assert_eq!(urls.0.read().unwrap().len(), EndpointUrls::MAX);
    for bad in ["not a url", "/relative", "ftp://host", "http://"] {
        assert!(
            matches!(urls.get(bad, "/x"), Err(UpstreamError::Connect(_))),
            "{bad}"
        );
    }
}

#[test]
fn each_worker_thread_uses_its_own_shard() {
    let one = UpstreamClient::new(std::iter::empty()).unwrap();
    assert_eq!(one.shard_count(), 1);
    let three = one.with_shards(3).unwrap();
    assert_eq!(three.shard_count(), 3);
    let t = crate::deployment::DEFAULT_CONNECT_TIMEOUT;
    let on = |i: usize| {
        let c = three.clone();
        std::thread::spawn(move || {
            bind_thread_to_shard(i);
            let shard = SHARD.with(Cell::get) % c.shards.len();
            // The pick is the shard's own client object.
            std::ptr::eq(c.pool(t).unwrap(), &c.shards[shard].pools[&t]) as usize * 10 + shard
        })
        .join()
        .unwrap()
    };
    assert_eq!(on(0), 10);
    assert_eq!(on(2), 12);
    assert_eq!(on(4), 11);
}

/// A loopback server that answers every connection with `response` (raw HTTP/1.1) and
/// hands back the request head it read.
async fn serve_once(response: &'static [u8]) -> (String, tokio::task::JoinHandle<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        sock.write_all(response).await.unwrap();
        sock.shutdown().await.ok();
        String::from_utf8(head).unwrap()
    });
    (format!("http://{addr}"), task)
}

#[tokio::test]
async fn fetch_returns_the_body_of_a_2xx() {
    let (base, seen) = serve_once(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"gpt\": {}}",
    )
    .await;
    let body = fetch(&format!("{base}/prices.json"), 1024, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(&body[..], b"{\"gpt\": {}}");
    let head = seen.await.unwrap();
    assert!(head.starts_with("GET /prices.json HTTP/1.1\r\n"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("host: 127.0.0.1:"),
        "{head}"
    );
}

#[tokio::test]
async fn fetch_refuses_a_non_2xx_and_a_body_over_the_limit() {
    let (base, _) =
        serve_once(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
    let e = fetch(&base, 1024, Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "could not reach the upstream: the server answered HTTP 404"
    );
    let (base, _) = serve_once(
        b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\nconnection: close\r\n\r\n01234567890123456789",
    )
    .await;
    let e = fetch(&base, 10, Duration::from_secs(5)).await.unwrap_err();
    assert!(matches!(e, UpstreamError::TooLarge { limit: 10 }), "{e:?}");
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error_with_its_cause() {
    // Bind then drop: nothing listens on the port afterwards.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = fetch(
        &format!("http://127.0.0.1:{port}/x"),
        1024,
        Duration::from_secs(5),
    )
    .await
    .unwrap_err();
    let UpstreamError::Connect(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(msg.to_lowercase().contains("refused"), "{msg}");
}

/// A client-chosen host is called at the address it was checked at (its name is never looked
/// up again: `.invalid` resolves nowhere), with the client's key only, and a redirect it
/// answers is the response: its target sees nothing.
#[tokio::test]
async fn a_chosen_host_is_called_at_its_checked_address_and_redirects_are_not_followed() {
    let trap = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let trap_addr = trap.local_addr().unwrap();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    tokio::spawn(async move {
        while let Ok(_conn) = trap.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let redirect: &'static str = Box::leak(
        format!(
            "HTTP/1.1 302 Found\r\nlocation: http://{trap_addr}/stolen\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
        .into_boxed_str(),
    );
    let (base, seen) = serve_once(redirect.as_bytes()).await;
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let own = Deployment::build(
        crate::DeploymentSpec {
            id: "d1".into(),
            model_group: "g".into(),
            provider: "openai".into(),
            upstream_model: "m".into(),
            api_base: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-deployment-secret".into()),
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap();
    let chosen_url = format!("http://byok.invalid:{}/v1", addr.port());
    let pinned = CheckedBase::unchecked_for_tests(&chosen_url, vec![addr]).unwrap();
    let dep = own
        .with_client_credentials(Some("sk-client-own"), Some(pinned))
        .unwrap();
    let client = UpstreamClient::new(std::iter::once(&own)).unwrap();
    let t = Duration::from_secs(5);
    let timeouts = Timeouts {
        connect: t,
        first_byte: t,
        idle: t,
        total: t,
    };
    let resp = client
        .post_json(
            &dep,
            "/chat/completions",
            Bytes::from_static(b"{}"),
            timeouts,
            &[],
        )
        .await
        .unwrap();
    assert_eq!(resp.status, StatusCode::FOUND);
    assert_eq!(
        resp.headers["location"],
        format!("http://{trap_addr}/stolen").as_str()
    );
    let head = seen.await.unwrap().to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/chat/completions http/1.1\r\n"),
        "{head}"
    );
    assert!(
        head.contains(&format!("host: byok.invalid:{}\r\n", addr.port())),
        "{head}"
    );
    assert!(
        head.contains("authorization: bearer sk-client-own\r\n"),
        "{head}"
    );
    assert!(!head.contains("sk-deployment-secret"), "{head}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// An `https://` client-chosen host goes through the chosen pool, whose resolver answers with
/// the pinned address: the TCP connection reaches it (the TLS handshake then fails, as this
/// listener speaks no TLS) although the name resolves nowhere.
#[tokio::test]
async fn a_chosen_https_host_connects_to_its_pinned_address() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        sock.shutdown().await.ok();
        true
    });
    let own = Deployment::build(
        crate::DeploymentSpec {
            id: "d1".into(),
            model_group: "g".into(),
            provider: "openai".into(),
            upstream_model: "m".into(),
            api_key: Some("sk-deployment-secret".into()),
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap();
    let url = format!("https://byok.invalid:{}/v1", addr.port());
    let dep = own
        .with_client_credentials(
            Some("sk-client-own"),
            Some(CheckedBase::unchecked_for_tests(&url, vec![addr]).unwrap()),
        )
        .unwrap();
    let client = UpstreamClient::new(std::iter::once(&own)).unwrap();
    let t = Duration::from_secs(5);
    let timeouts = Timeouts {
        connect: t,
        first_byte: t,
        idle: t,
        total: t,
    };
    let e = client
        .post_json(
            &dep,
            "/chat/completions",
            Bytes::from_static(b"{}"),
            timeouts,
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        accepted.await.unwrap(),
        "the pinned address was connected to"
    );
    let UpstreamError::Connect(msg) = &e else {
        panic!("{e:?}")
    };
    assert!(!msg.contains("dns"), "no lookup was made: {msg}");
}
