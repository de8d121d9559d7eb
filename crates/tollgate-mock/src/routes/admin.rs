//! Control endpoints (never recorded): `GET /__observations[?keep=1][&deployment=D][&route=R][&model=M]`
//! (filters match exactly; draining removes only the matching records), `DELETE /__observations`,
//! `POST /__script`, `GET /__script`, `DELETE /__script[?key=K]`.

use bytes::Bytes;
use http::request::Parts;
use http::{Method, Response};
use serde_json::{Value, json};

use crate::behavior::ScriptRequest;
use crate::body::MockBody;
use crate::observe::RequestGuard;
use crate::state::State;

fn reply(status: u16, v: &Value) -> Response<MockBody> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    let mut r = Response::new(MockBody::full(bytes, RequestGuard::disabled()));
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::OK);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// Decode `%XX` escapes and `+` (form encoding); invalid escapes are kept as they are.
fn percent_decode(s: &str) -> String {
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_param(parts: &Parts, name: &str) -> Option<String> {
    parts.uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| percent_decode(v))
    })
}

/// Handle a control request.
pub(crate) fn handle(state: &State, parts: &Parts, body: &Bytes) -> Response<MockBody> {
    match (&parts.method, parts.uri.path().trim_end_matches('/')) {
        (&Method::GET, "/__observations") => {
            let keep = matches!(query_param(parts, "keep").as_deref(), Some("1" | "true"));
            let deployment = query_param(parts, "deployment");
            let route = query_param(parts, "route");
            let model = query_param(parts, "model");
            let records = if deployment.is_none() && route.is_none() && model.is_none() {
                state.recorder.snapshot(!keep)
            } else {
                state.recorder.take_matching(!keep, |o| {
                    deployment
                        .as_deref()
                        .is_none_or(|d| o.deployment.as_deref() == Some(d))
                        && route
                            .as_deref()
                            .is_none_or(|r| o.route.as_deref() == Some(r))
                        && model
                            .as_deref()
                            .is_none_or(|m| o.model.as_deref() == Some(m))
                })
            };
            reply(200, &json!({"requests": records}))
        }
        (&Method::DELETE, "/__observations") => {
            let n = state.recorder.snapshot(true).len();
            reply(200, &json!({"cleared": n}))
        }
        (&Method::POST, "/__script") => {
            let reqs: Result<Vec<ScriptRequest>, _> = match serde_json::from_slice::<Value>(body) {
                Ok(Value::Array(a)) => a.into_iter().map(serde_json::from_value).collect(),
                Ok(v) => serde_json::from_value(v).map(|r| vec![r]),
                Err(e) => Err(e),
            };
            match reqs {
                Ok(reqs) => {
                    for r in reqs {
                        state.scripts.add(r);
                    }
                    reply(
                        200,
                        &json!({"ok": true, "scripts": state.scripts.describe()}),
                    )
                }
                Err(e) => reply(
                    400,
                    &json!({"ok": false, "error": format!("invalid script: {e}")}),
                ),
            }
        }
        (&Method::GET, "/__script") => reply(200, &json!({"scripts": state.scripts.describe()})),
        (&Method::DELETE, "/__script") => {
            state.scripts.clear(query_param(parts, "key").as_deref());
            reply(200, &json!({"ok": true}))
        }
        _ => reply(
            404,
            &json!({"ok": false, "error": "unknown control endpoint"}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn decodes_query_values() {
        assert_eq!(percent_decode("%2Fchat%2Fcompletions"), "/chat/completions");
        assert_eq!(percent_decode("a+b%20c"), "a b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%é"), "%zz%é");
    }
}
