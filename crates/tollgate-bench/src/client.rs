//! Small one-shot HTTP helpers for health checks and set-up calls (not the load path).

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};

use crate::endpoint::Endpoint;

/// Sends one request on a fresh connection and returns `(status, body)`.
///
/// Errors: a text describing the URL, connection or protocol failure.
pub async fn call(
    method: http::Method,
    url: &str,
    headers: &[(String, String)],
    body: Option<Bytes>,
) -> Result<(u16, Bytes), String> {
    let ep = Endpoint::parse(url).await.map_err(|e| e.to_string())?;
    let mut sender = ep.connect().await.map_err(|e| format!("connect: {e}"))?;
    let path = if ep.prefix.is_empty() {
        "/"
    } else {
        ep.prefix.as_str()
    };
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, ep.authority.as_str());
    for (k, v) in headers {
        b = b.header(k.as_str(), v.as_str());
    }
    if body.is_some() {
        b = b.header(http::header::CONTENT_TYPE, "application/json");
    }
    let req = b
        .body(Full::new(body.unwrap_or_default()))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// `GET url` (see [`call`]).
pub async fn get(url: &str, headers: &[(String, String)]) -> Result<(u16, Bytes), String> {
    call(http::Method::GET, url, headers, None).await
}
