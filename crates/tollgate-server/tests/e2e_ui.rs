//! End-to-end admin UI (issue 25) through the real `tollgate` binary: the embedded front end
//! at `/ui/`, the login routes, and the session cookie as management-API authentication.
//!
//! - `/ui` redirects to `/ui/`; each file has its content type, `Cache-Control: no-cache`, an
//!   `ETag` (304 on `If-None-Match`) and the page a Content Security Policy;
//! - a login answers `Set-Cookie: tollgate_session=<64 hex>; Path=/; HttpOnly;
//!   SameSite=Strict; Max-Age=86400` (`; Secure` when `X-Forwarded-Proto: https`) and a
//!   `csrf_token`; a wrong password is 401 with LiteLLM's words;
//! - with the cookie, reads pass; a POST without `x-tollgate-csrf` (or with a wrong one) is
//!   403 before the route runs, with the token it runs; Bearer calls need no token;
//! - an internal user's session (e-mail and password, `/user/new`'s `password`) lists only
//!   that user's keys in `/key/list` and may not create keys;
//! - logout needs the token, clears the cookie, and the old cookie is refused (401) from then on.
//!
//! SQLite in a temporary directory; with `TOLLGATE_TEST_DATABASE_URL` the internal-user test
//! also runs on a fresh Postgres database (the password column is written there).
#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

#[path = "common/governance.rs"]
mod gov;

use gov::*;
use serde_json::{Value, json};

/// `UI_USERNAME` / `UI_PASSWORD` of the test config.
const UI_USER: &str = "ops";
const UI_PASS: &str = "ui-pass-CANARY4";

/// The governed config on the mock, with the UI's admin credentials in
/// `environment_variables` (set before the gateway reads them).
fn ui_config(m: &tollgate_mock::MockHandle, db: Option<&str>) -> String {
    let mut c = config(&m.base_url(), &[flat_dep("m1", 0.001)], "", db);
    c.push_str(&format!(
        "environment_variables:\n  UI_USERNAME: {UI_USER}\n  UI_PASSWORD: {UI_PASS}\n"
    ));
    c
}

/// `method path` with `headers` and an optional JSON body (redirects not followed).
async fn send(
    gw: &GovGateway,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Resp {
    // Redirects are not followed: the test reads them.
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut r = client.request(method.parse().unwrap(), gw.url(path));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    if let Some(b) = body {
        r = r.json(&b);
    }
    read(r.send().await.expect("request reaches the gateway")).await
}

/// A logged-in session: its `Cookie` header value and CSRF token.
struct Login {
    cookie: String,
    csrf: String,
    body: Value,
}

/// `POST /ui/api/login` with `body`; asserts 200 and the cookie's exact attributes.
async fn login(gw: &GovGateway, body: Value) -> Login {
    let r = send(gw, "POST", "/ui/api/login", &[], Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let set = r.header("set-cookie");
    let id = set
        .strip_prefix("tollgate_session=")
        .and_then(|s| s.strip_suffix("; Path=/; HttpOnly; SameSite=Strict; Max-Age=86400"))
        .unwrap_or_else(|| panic!("cookie attributes: {set}"));
    assert!(
        id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{set}"
    );
    let csrf = r.body["csrf_token"].as_str().unwrap().to_owned();
    assert!(csrf.len() == 64 && csrf != id, "{}", r.text);
    Login {
        cookie: format!("tollgate_session={id}"),
        csrf,
        body: r.body,
    }
}

/// The exact 401 of a failed login.
fn invalid_login() -> Value {
    json!({"error": {
        "message": "Invalid credentials used to access UI. Use the master key, UI_USERNAME and UI_PASSWORD, or an internal user's e-mail (or user_id) and password.",
        "type": "auth_error", "param": null, "code": "401"}})
}

#[tokio::test]
async fn the_front_end_is_served_from_the_binary() {
    let m = mock().await;
    let gw = GovGateway::start(&ui_config(&m, None));
    let r = send(&gw, "GET", "/ui", &[], None).await;
    assert_eq!((r.status, r.header("location")), (308, "/ui/".to_owned()));
    let page = send(&gw, "GET", "/ui/", &[], None).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    assert_eq!(page.header("cache-control"), "no-cache");
    assert_eq!(page.header("x-content-type-options"), "nosniff");
    assert_eq!(page.header("content-security-policy"), tollgate_ui::CSP);
    assert!(
        page.text
            .contains(r#"<script type="module" src="js/app.js"></script>"#)
    );
    for (path, ty) in [
        ("/ui/js/app.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
        ("/ui/favicon.svg", "image/svg+xml"),
    ] {
        let r = send(&gw, "GET", path, &[], None).await;
        assert_eq!(
            (r.status, r.header("content-type")),
            (200, ty.to_owned()),
            "{path}"
        );
        let etag = r.header("etag");
        let again = send(&gw, "GET", path, &[("if-none-match", &etag)], None).await;
        assert_eq!((again.status, again.text.as_str()), (304, ""), "{path}");
    }
    let missing = send(&gw, "GET", "/ui/js/none.js", &[], None).await;
    assert_eq!(
        (missing.status, missing.text.as_str()),
        (404, "No admin UI file /ui/js/none.js")
    );
}

#[tokio::test]
async fn sessions_authenticate_the_management_api_behind_a_csrf_check() {
    let m = mock().await;
    let gw = GovGateway::start(&ui_config(&m, None));
    for body in [
        json!({"username": UI_USER, "password": "wrong"}),
        json!({"master_key": "sk-not-the-master"}),
        json!({"username": "admin", "password": MASTER}),
    ] {
        let r = send(&gw, "POST", "/ui/api/login", &[], Some(body.clone())).await;
        assert_eq!((r.status, &r.body), (401, &invalid_login()), "{body}");
    }
    // A form another site posts (text/plain, parsing as JSON) is not a login.
    let r = send(
        &gw,
        "POST",
        "/ui/api/login",
        &[("content-type", "text/plain")],
        Some(json!({"master_key": MASTER})),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.text);
    assert!(r.headers.get("set-cookie").is_none());
    assert_eq!(
        r.body["error"]["message"],
        "The login body must be JSON, sent with content-type: application/json."
    );
    let admin = login(&gw, json!({"master_key": MASTER})).await;
    assert_eq!(
        (&admin.body["user_id"], &admin.body["user_role"]),
        (&json!("admin"), &json!("proxy_admin"))
    );
    let ops = login(&gw, json!({"username": UI_USER, "password": UI_PASS})).await;
    assert_eq!(
        (&ops.body["user_id"], &ops.body["user_role"]),
        (&json!(UI_USER), &json!("proxy_admin"))
    );
    let tls = send(
        &gw,
        "POST",
        "/ui/api/login",
        &[("x-forwarded-proto", "https")],
        Some(json!({"master_key": MASTER})),
    )
    .await;
    assert!(
        tls.header("set-cookie")
            .ends_with("; Max-Age=86400; Secure")
    );

    let c = admin.cookie.as_str();
    let r = send(&gw, "GET", "/key/list", &[("cookie", c)], None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let session = send(&gw, "GET", "/ui/api/session", &[("cookie", c)], None).await;
    assert_eq!(session.body, admin.body);
    let team = json!({"team_id": "t-ui", "max_budget": 1.5});
    for csrf in [None, Some("0".repeat(64))] {
        let mut h = vec![("cookie", c)];
        if let Some(t) = &csrf {
            h.push(("x-tollgate-csrf", t.as_str()));
        }
        let r = send(&gw, "POST", "/team/new", &h, Some(team.clone())).await;
        assert_eq!(r.status, 403, "{}", r.text);
        assert_eq!(
            r.body,
            json!({"error": {
            "message": "CSRF check failed: a request authenticated by the admin UI session cookie that changes state must carry the x-tollgate-csrf header with the csrf_token the login answered. Route=/team/new",
            "type": "auth_error", "param": null, "code": "403"}})
        );
    }
    let listed = get_as(&gw, MASTER, "/team/list").await;
    assert_eq!(listed.body, json!([]), "the refused POST created nothing");
    let h = [("cookie", c), ("x-tollgate-csrf", admin.csrf.as_str())];
    let r = send(&gw, "POST", "/team/new", &h, Some(team)).await;
    assert_eq!(
        (r.status, &r.body["team_id"]),
        (200, &json!("t-ui")),
        "{}",
        r.text
    );
    assert_eq!(r.body["max_budget"], json!(1.5));
    // Bearer calls are unchanged: no token needed, even with a cookie beside them.
    let r = send(
        &gw,
        "POST",
        "/team/new",
        &[
            ("authorization", &format!("Bearer {MASTER}")),
            ("cookie", c),
        ],
        Some(json!({"team_id": "t-bearer"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Logout needs the token, clears the cookie, and ends the session for good.
    let r = send(&gw, "POST", "/ui/api/logout", &[("cookie", c)], None).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = send(&gw, "POST", "/ui/api/logout", &h, None).await;
    assert_eq!((r.status, &r.body), (200, &json!({"logged_out": true})));
    assert_eq!(
        r.header("set-cookie"),
        "tollgate_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    );
    let r = send(&gw, "GET", "/key/list", &[("cookie", c)], None).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "Authentication Error, the admin UI session has ended (logged out or expired). Log in again."
    );
    let r = send(&gw, "GET", "/ui/api/session", &[("cookie", c)], None).await;
    assert_eq!(r.status, 401);
    // The other session is untouched.
    let r = send(
        &gw,
        "GET",
        "/key/list",
        &[("cookie", ops.cookie.as_str())],
        None,
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(
        !gw.log().contains(UI_PASS),
        "the UI password is never logged"
    );
}

/// An internal user with a password logs in by e-mail (and by user_id) and sees only their
/// own keys.
async fn internal_user_sees_only_their_keys(gw: &GovGateway) -> String {
    let r = post_as(
        gw,
        MASTER,
        "/user/new",
        &json!({"user_id": "ann", "user_email": "ann@example.com", "password": "ann-pw-CANARY5"}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.body.get("password").is_none(), "{}", r.text);
    let first = r.body["token_id"].as_str().unwrap().to_owned();
    let (_, second) = generate_key(gw, json!({"user_id": "ann"})).await;
    let (_, _bob) = generate_key(gw, json!({"user_id": "bob"})).await;
    let (_, _none) = generate_key(gw, json!({})).await;
    let wrong = json!({"username": "ann@example.com", "password": "ann-pw"});
    let r = send(gw, "POST", "/ui/api/login", &[], Some(wrong)).await;
    assert_eq!((r.status, &r.body), (401, &invalid_login()));

    let ann = login(
        gw,
        json!({"username": "ann@example.com", "password": "ann-pw-CANARY5"}),
    )
    .await;
    assert_eq!(
        (&ann.body["user_id"], &ann.body["user_role"]),
        (&json!("ann"), &json!("internal_user"))
    );
    let c = ann.cookie.as_str();
    let r = send(gw, "GET", "/key/list?size=100", &[("cookie", c)], None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let mut keys: Vec<&str> = r.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    keys.sort_unstable();
    let mut want = vec![first.as_str(), second.as_str()];
    want.sort_unstable();
    assert_eq!((keys, &r.body["total_count"]), (want, &json!(2)));
    let r = send(gw, "GET", "/key/list?user_id=bob", &[("cookie", c)], None).await;
    assert_eq!(r.status, 403, "{}", r.text);
    let r = send(
        gw,
        "POST",
        "/key/generate",
        &[("cookie", c), ("x-tollgate-csrf", ann.csrf.as_str())],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(
        r.body["error"]["message"],
        "Only proxy admin can be used to generate, delete, update info for new keys/users/teams. Route=/key/generate. Your role=internal_user"
    );
    let by_id = login(gw, json!({"username": "ann", "password": "ann-pw-CANARY5"})).await;
    assert_eq!(by_id.body["user_id"], json!("ann"));
    assert!(
        !gw.log().contains("ann-pw-CANARY5"),
        "no password in the log"
    );

    ann.cookie
}

/// The session of `cookie` (ann's) follows the user row: a new role applies at once, and once
/// the user is deleted the cookie is refused.
async fn session_follows_the_user_row(gw: &GovGateway, c: &str) {
    let role = json!({"user_id": "ann", "user_role": "proxy_admin_viewer"});
    let r = post_as(gw, MASTER, "/user/update", &role).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = send(gw, "GET", "/key/list", &[("cookie", c)], None).await;
    assert_eq!(
        (r.status, &r.body["total_count"]),
        (200, &json!(4)),
        "{}",
        r.text
    );
    let r = post_as(gw, MASTER, "/user/delete", &json!({"user_ids": ["ann"]})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = send(gw, "GET", "/key/list", &[("cookie", c)], None).await;
    assert_eq!(r.status, 401, "{}", r.text);
    let r = send(gw, "GET", "/ui/api/session", &[("cookie", c)], None).await;
    assert_eq!(r.status, 401, "{}", r.text);
}

#[tokio::test]
async fn an_internal_users_session_sees_only_their_keys() {
    let m = mock().await;
    let gw = GovGateway::start(&ui_config(&m, None));
    let cookie = internal_user_sees_only_their_keys(&gw).await;
    let stored = grep_dir(gw.dir(), b"ann-pw-CANARY5");
    assert!(
        stored.is_empty(),
        "the password is stored hashed only: {stored:?}"
    );
    session_follows_the_user_row(&gw, &cookie).await;
}

#[tokio::test]
async fn an_internal_users_session_sees_only_their_keys_postgres() {
    let Some(db) = PgDb::create("ui_internal_user").await else {
        return;
    };
    let m = mock().await;
    let gw = GovGateway::start(&ui_config(&m, Some(&db.url)));
    let cookie = internal_user_sees_only_their_keys(&gw).await;
    assert_eq!(
        db.grep_tables("ann-pw-CANARY5").await,
        Vec::<(String, i64)>::new()
    );
    let mut c = db.connect().await;
    let stored: Option<String> =
        sqlx::query_scalar("SELECT password FROM \"LiteLLM_UserTable\" WHERE user_id = 'ann'")
            .fetch_one(&mut c)
            .await
            .unwrap();
    assert_eq!(stored, Some(sha256_hex("ann-pw-CANARY5")));
    session_follows_the_user_row(&gw, &cookie).await;
}
