//! The front end's files, embedded in the binary at build time (`include_bytes!` of
//! `assets/`): served at `/ui/` with their content type, an `ETag` and `Cache-Control:
//! no-cache` (the browser keeps them and revalidates each load, so an upgraded gateway's UI is
//! used at once and an unchanged one costs a 304). Nothing is fetched from elsewhere.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION};
use http::{HeaderMap, HeaderValue, StatusCode};
use sha2::{Digest, Sha256};

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    /// Path under `/ui/` (`index.html`, `js/app.js`, ...).
    pub path: &'static str,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The bytes.
    pub body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $ty:expr) => {
        Asset {
            path: $path,
            content_type: $ty,
            body: include_bytes!(concat!("../assets/", $path)),
        }
    };
}

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the front end.
pub const ASSETS: &[Asset] = &[
    asset!("index.html", HTML),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("favicon.svg", "image/svg+xml"),
    asset!("js/app.js", JS),
    asset!("js/api.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/login.js", JS),
    asset!("js/keys.js", JS),
    asset!("js/key_form.js", JS),
    asset!("js/key_page.js", JS),
    asset!("js/teams.js", JS),
    asset!("js/models.js", JS),
    asset!("js/model_form.js", JS),
    asset!("js/spend.js", JS),
    asset!("js/chart.js", JS),
    asset!("js/form_dialog.js", JS),
    asset!("js/users.js", JS),
    asset!("js/user_form.js", JS),
    asset!("js/customers.js", JS),
    asset!("js/budgets.js", JS),
    asset!("js/tags.js", JS),
    asset!("js/team_page.js", JS),
];

/// The page's Content Security Policy: everything from this origin only, no inline script.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// `"<first 16 hex of the SHA-256>"` of each asset, in [`ASSETS`] order.
fn etags() -> &'static [String] {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| format!("\"{}\"", &hex::encode(Sha256::digest(a.body))[..16]))
            .collect()
    })
}

/// The asset routes: `/ui` (redirect to `/ui/`), `/ui/` (the page) and `/ui/{*path}`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(redirect))
        .route(
            "/ui/",
            get(|h: HeaderMap| async move { serve("index.html", &h) }),
        )
        .route(
            "/ui/{*path}",
            get(|Path(p): Path<String>, h: HeaderMap| async move { serve(&p, &h) }),
        )
}

async fn redirect() -> Response {
    (StatusCode::PERMANENT_REDIRECT, [(LOCATION, "/ui/")]).into_response()
}

/// The asset at `path` (200, or 304 when `If-None-Match` names its tag); 404 for any other
/// path.
fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some(i) = ASSETS.iter().position(|a| a.path == path) else {
        return (
            StatusCode::NOT_FOUND,
            [(CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("No admin UI file /ui/{path}"),
        )
            .into_response();
    };
    let (a, tag) = (&ASSETS[i], &etags()[i]);
    let fresh = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(CONTENT_TYPE, a.content_type)], a.body).into_response()
    };
    let h = resp.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(tag) {
        h.insert(ETAG, v);
    }
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    if a.content_type == HTML {
        h.insert("content-security-policy", HeaderValue::from_static(CSP));
        h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_its_type_and_the_js_ones_are_modules() {
        for a in ASSETS {
            let ext = a.path.rsplit('.').next().unwrap();
            let want = match ext {
                "html" => HTML,
                "js" => JS,
                "css" => "text/css; charset=utf-8",
                "svg" => "image/svg+xml",
                other => panic!("unexpected asset type {other}"),
            };
            assert_eq!(a.content_type, want, "{}", a.path);
            assert!(!a.body.is_empty(), "{}", a.path);
        }
        // Every file in assets/ is embedded (a new file must be listed above).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        let mut on_disk = Vec::new();
        for sub in ["", "js"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                let p = e.unwrap().path();
                if p.is_file() {
                    let name = p.file_name().unwrap().to_str().unwrap().to_owned();
                    on_disk.push(if sub.is_empty() {
                        name
                    } else {
                        format!("{sub}/{name}")
                    });
                }
            }
        }
        on_disk.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.path.to_owned()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
    }

    #[test]
    fn a_known_tag_gets_304() {
        let r = serve("app.css", &HeaderMap::new());
        assert_eq!(r.status(), StatusCode::OK);
        let tag = r.headers()[ETAG].clone();
        assert_eq!(r.headers()[CACHE_CONTROL], "no-cache");
        let mut h = HeaderMap::new();
        h.insert(IF_NONE_MATCH, tag.clone());
        let r = serve("app.css", &h);
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(r.headers()[ETAG], tag);
        assert_eq!(
            serve("../Cargo.toml", &HeaderMap::new()).status(),
            StatusCode::NOT_FOUND
        );
    }
}
