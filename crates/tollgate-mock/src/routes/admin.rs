//! Control endpoints (never recorded): `GET /__observations[?keep=1]`, `DELETE /__observations`,
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

fn query_param<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts.uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then_some(v)
    })
}

/// Handle a control request.
pub(crate) fn handle(state: &State, parts: &Parts, body: &Bytes) -> Response<MockBody> {
    match (&parts.method, parts.uri.path().trim_end_matches('/')) {
        (&Method::GET, "/__observations") => {
            let keep = matches!(query_param(parts, "keep"), Some("1" | "true"));
            let records = state.recorder.snapshot(!keep);
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
            state.scripts.clear(query_param(parts, "key"));
            reply(200, &json!({"ok": true}))
        }
        _ => reply(
            404,
            &json!({"ok": false, "error": "unknown control endpoint"}),
        ),
    }
}
