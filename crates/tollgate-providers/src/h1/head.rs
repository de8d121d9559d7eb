//! The request head written to the upstream and the response head read back (RFC 9112 §3,
//! §4, §6.3), parsed by `httparse` into an `http` status and header map whose values share
//! the read buffer instead of being copied.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, StatusCode, Uri};

/// The longest response head accepted (status line and headers), bytes.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header fields accepted in a response head (hyper's default too).
const MAX_HEADERS: usize = 100;

/// How the response body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// No body: a 204 or 304, or the answer to a `HEAD`.
    Empty,
    /// Exactly this many bytes (`content-length`).
    Length(u64),
    /// `transfer-encoding: chunked`.
    Chunked,
    /// Everything until the upstream closes the connection.
    UntilClose,
}

/// A parsed final response head.
#[derive(Debug)]
pub(crate) struct Head {
    /// The status.
    pub status: StatusCode,
    /// The header fields, in arrival order.
    pub headers: HeaderMap,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection may carry another request after this body.
    pub keep_alive: bool,
}

/// A response head the gateway cannot use. The message names the rule broken, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HeadError {
    /// Not an HTTP/1.x response head.
    #[error("malformed HTTP response head: {0}")]
    Malformed(&'static str),
    /// Longer than [`MAX_HEAD_BYTES`].
    #[error("the HTTP response head is longer than {MAX_HEAD_BYTES} bytes")]
    TooLong,
}

/// Header fields the gateway writes itself or that are hop-by-hop (RFC 9110 §7.6.1): a
/// deployment's or client's value for them is never forwarded.
fn managed(name: &HeaderName) -> bool {
    name == header::HOST
        || name == header::CONTENT_LENGTH
        || name == header::TRANSFER_ENCODING
        || name == header::CONNECTION
        || name == header::TE
        || name == header::UPGRADE
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}

/// Appends the request head for `method` on `uri` to `out`: the request line (origin form),
/// `host` (the port left out when it is 80), `content-length` when `content_length` is set,
/// then `fields` except the ones the gateway manages, then the blank line.
pub(crate) fn encode_request<'a>(
    out: &mut BytesMut,
    method: &Method,
    uri: &Uri,
    content_length: Option<usize>,
    fields: impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)>,
) {
    out.put_slice(method.as_str().as_bytes());
    out.put_u8(b' ');
    // Origin form (RFC 9112 §3.2.1): the path, never empty, then the query.
    out.put_slice(uri.path().as_bytes());
    if let Some(query) = uri.query() {
        out.put_u8(b'?');
        out.put_slice(query.as_bytes());
    }
    out.put_slice(b" HTTP/1.1\r\nhost: ");
    out.put_slice(uri.host().unwrap_or_default().as_bytes());
    if let Some(port) = uri.port_u16().filter(|p| *p != 80) {
        out.put_u8(b':');
        put_decimal(out, port as u64);
    }
    out.put_slice(b"\r\n");
    if let Some(len) = content_length {
        out.put_slice(b"content-length: ");
        put_decimal(out, len as u64);
        out.put_slice(b"\r\n");
    }
    for (name, value) in fields.filter(|(n, _)| !managed(n)) {
        out.put_slice(name.as_str().as_bytes());
        out.put_slice(b": ");
        out.put_slice(value.as_bytes());
        out.put_slice(b"\r\n");
    }
    out.put_slice(b"\r\n");
}

fn put_decimal(out: &mut BytesMut, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.put_slice(&digits[i..]);
}

/// What [`parse_response`] found at the front of the buffer.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// The head is not complete yet: read more.
    Partial,
    /// An interim (1xx) response was consumed; a final one follows.
    Interim,
    /// The final head, consumed from the buffer; the body starts at the buffer's front.
    Final(Head),
}

/// Parses the response head at the front of `buf` for a request made with `method`,
/// consuming it when complete.
///
/// Errors: [`HeadError::Malformed`] (not HTTP/1.x, a bad `content-length`, a `101` the
/// gateway never asks for), [`HeadError::TooLong`].
pub(crate) fn parse_response(buf: &mut BytesMut, method: &Method) -> Result<Parsed, HeadError> {
    // Left uninitialized, as hyper does: httparse writes each slot it returns, and zeroing
    // 100 slots (3.2 KB) before every parse cost more than parsing a short head.
    let mut fields =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut res,
        buf,
        &mut fields,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Err(HeadError::TooLong);
        }
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(HeadError::Malformed("more than 100 header fields"));
        }
        Err(_) => {
            return Err(HeadError::Malformed(
                "not an HTTP/1.x status line and headers",
            ));
        }
    };
    if len > MAX_HEAD_BYTES {
        return Err(HeadError::TooLong);
    }
    let code = res.code.unwrap_or_default();
    let status =
        StatusCode::from_u16(code).map_err(|_| HeadError::Malformed("invalid status code"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(HeadError::Malformed("unexpected 101 Switching Protocols"));
    }
    if status.is_informational() {
        let _ = buf.split_to(len);
        return Ok(Parsed::Interim);
    }
    let http11 = res.version == Some(1);
    // Offsets into the buffer, so the values can share it once it is frozen.
    let base = buf.as_ptr() as usize;
    let mut spans: Vec<(HeaderName, usize, usize)> = Vec::with_capacity(res.headers.len());
    for f in res.headers.iter() {
        let name = super::names::header_name(f.name.as_bytes())
            .map_err(|_| HeadError::Malformed("invalid header name"))?;
        let start = f.value.as_ptr() as usize - base;
        spans.push((name, start, start + f.value.len()));
    }
    let head_bytes: Bytes = buf.split_to(len).freeze();
    let mut headers = HeaderMap::with_capacity(spans.len());
    for (name, start, end) in spans {
        let value = HeaderValue::from_maybe_shared(head_bytes.slice(start..end))
            .map_err(|_| HeadError::Malformed("invalid header value"))?;
        headers.append(name, value);
    }
    let (framing, framing_allows_reuse) = framing(method, status, &headers)?;
    let keep_alive = framing_allows_reuse && http11 && !has_token(&headers, "close");
    Ok(Parsed::Final(Head {
        status,
        headers,
        framing,
        keep_alive,
    }))
}

/// The body's framing and whether it still lets the connection be reused (RFC 9112 §6.3).
fn framing(
    method: &Method,
    status: StatusCode,
    headers: &HeaderMap,
) -> Result<(Framing, bool), HeadError> {
    if method == Method::HEAD
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Ok((Framing::Empty, true));
    }
    if headers.contains_key(header::TRANSFER_ENCODING) {
        // The last coding decides; a `content-length` beside it is ignored, and the
        // connection is not reused after such a message (§6.3 rule 3).
        let mut codings = Vec::new();
        for value in headers.get_all(header::TRANSFER_ENCODING) {
            let text = value
                .to_str()
                .map_err(|_| HeadError::Malformed("invalid transfer-encoding"))?;
            codings.extend(text.split(',').map(str::trim).filter(|c| !c.is_empty()));
        }
        let last = codings.last();
        let chunked = last.is_some_and(|c| c.eq_ignore_ascii_case("chunked"));
        let reuse = chunked && !headers.contains_key(header::CONTENT_LENGTH);
        return Ok(if chunked {
            (Framing::Chunked, reuse)
        } else {
            (Framing::UntilClose, false)
        });
    }
    let mut length: Option<u64> = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        // A list of identical values is one length (§6.3 rule 5).
        for part in value.as_bytes().split(|b| *b == b',') {
            let n = parse_length(part.trim_ascii())
                .ok_or(HeadError::Malformed("invalid content-length"))?;
            if length.is_some_and(|l| l != n) {
                return Err(HeadError::Malformed("conflicting content-length values"));
            }
            length = Some(n);
        }
    }
    Ok(match length {
        Some(n) => (Framing::Length(n), true),
        None => (Framing::UntilClose, false),
    })
}

fn parse_length(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

/// Whether the `connection` field lists `token` (case-insensitive).
fn has_token(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Result<Parsed, HeadError> {
        parse_response(&mut BytesMut::from(raw), &Method::POST)
    }

    fn final_head(raw: &str) -> Head {
        match head(raw) {
            Ok(Parsed::Final(h)) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_request_head_has_host_length_and_only_forwardable_fields() {
        let mut out = BytesMut::new();
        let uri: Uri = "http://10.0.0.5:8000/v1/chat/completions?x=1"
            .parse()
            .unwrap();
        let fields = [
            (
                header::AUTHORIZATION,
                HeaderValue::from_static("Bearer sk-1"),
            ),
            (header::HOST, HeaderValue::from_static("evil")),
            (header::CONNECTION, HeaderValue::from_static("close")),
            (header::CONTENT_LENGTH, HeaderValue::from_static("999")),
            (
                HeaderName::from_static("anthropic-beta"),
                HeaderValue::from_static("tools-1"),
            ),
        ];
        encode_request(
            &mut out,
            &Method::POST,
            &uri,
            Some(1234),
            fields.iter().map(|(n, v)| (n, v)),
        );
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "POST /v1/chat/completions?x=1 HTTP/1.1\r\nhost: 10.0.0.5:8000\r\n\
             content-length: 1234\r\nauthorization: Bearer sk-1\r\nanthropic-beta: tools-1\r\n\r\n"
        );
        let mut out = BytesMut::new();
        let uri: Uri = "http://models.internal".parse().unwrap();
        encode_request(&mut out, &Method::GET, &uri, None, std::iter::empty());
        assert_eq!(&out[..], b"GET / HTTP/1.1\r\nhost: models.internal\r\n\r\n");
        let mut out = BytesMut::new();
        let uri: Uri = "http://[::1]:80/x".parse().unwrap();
        encode_request(&mut out, &Method::POST, &uri, Some(0), std::iter::empty());
        assert_eq!(
            &out[..],
            b"POST /x HTTP/1.1\r\nhost: [::1]\r\ncontent-length: 0\r\n\r\n"
        );
        let mut out = BytesMut::new();
        let uri: Uri = "http://h?key=1".parse().unwrap();
        encode_request(&mut out, &Method::GET, &uri, None, std::iter::empty());
        assert_eq!(&out[..], b"GET /?key=1 HTTP/1.1\r\nhost: h\r\n\r\n");
    }

    #[test]
    fn a_response_head_is_consumed_and_its_values_kept_in_order() {
        let mut buf = BytesMut::from(
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nx-a: 1\r\nX-A: 2\r\n\
             content-length: 5\r\n\r\nhello",
        );
        let Ok(Parsed::Final(h)) = parse_response(&mut buf, &Method::POST) else {
            panic!()
        };
        assert_eq!(h.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(h.headers["retry-after"], "2");
        let a: Vec<_> = h.headers.get_all("x-a").iter().collect();
        assert_eq!(a, ["1", "2"]);
        assert_eq!(h.framing, Framing::Length(5));
        assert!(h.keep_alive);
        assert_eq!(&buf[..], b"hello");
    }

    #[test]
    fn partial_interim_and_too_long_heads() {
        assert!(matches!(
            head("HTTP/1.1 200 OK\r\ncontent-le"),
            Ok(Parsed::Partial)
        ));
        let mut buf = BytesMut::from("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n");
        assert!(matches!(
            parse_response(&mut buf, &Method::POST),
            Ok(Parsed::Interim)
        ));
        assert_eq!(&buf[..], b"HTTP/1.1 200 OK\r\n");
        let long = format!("HTTP/1.1 200 OK\r\nx: {}", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(head(&long).unwrap_err(), HeadError::TooLong);
        assert!(matches!(
            head("SSH-2.0-OpenSSH\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
        assert!(matches!(
            head("HTTP/1.1 101 Switching Protocols\r\n\r\n"),
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn framing_follows_rfc_9112_section_6_3() {
        let f = |raw: &str| {
            let h = final_head(raw);
            (h.framing, h.keep_alive)
        };
        assert_eq!(
            f("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"),
            (Framing::Chunked, true)
        );
        assert_eq!(
            f("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, Chunked\r\ncontent-length: 3\r\n\r\n"),
            (Framing::Chunked, false)
        );
        assert_eq!(
            f("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n"),
            (Framing::UntilClose, false)
        );
        assert_eq!(
            f("HTTP/1.1 200 OK\r\ncontent-length: 7, 7\r\n\r\n"),
            (Framing::Length(7), true)
        );
        assert_eq!(f("HTTP/1.1 200 OK\r\n\r\n"), (Framing::UntilClose, false));
        assert_eq!(f("HTTP/1.1 204 No Content\r\n\r\n"), (Framing::Empty, true));
        assert_eq!(
            f("HTTP/1.1 200 OK\r\ncontent-length: 1\r\nConnection: keep-alive, Close\r\n\r\n"),
            (Framing::Length(1), false)
        );
        assert_eq!(
            f("HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n"),
            (Framing::Length(1), false)
        );
        for bad in [
            "HTTP/1.1 200 OK\r\ncontent-length: 7, 8\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 99999999999999999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntransfer-encoding: gzip\u{80}\r\n\r\n",
        ] {
            assert!(matches!(head(bad), Err(HeadError::Malformed(_))), "{bad}");
        }
        let h = parse_response(
            &mut BytesMut::from("HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n"),
            &Method::HEAD,
        );
        assert!(matches!(
            h,
            Ok(Parsed::Final(Head {
                framing: Framing::Empty,
                ..
            }))
        ));
    }
}
