//! Test harness: a `Governance` over in-memory SQLite, a stub `Authorize` (`Bearer admin` →
//! master key, `Bearer sk-…` → that virtual key), a stub `ModelRegistry`, and the router
//! driven with `tower::ServiceExt::oneshot`.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test support: a failed setup fails the test"
)]

use std::sync::{Arc, Mutex};

use axum::body::Body;
use chrono::Utc;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tollgate_admin::{
    AdminContext, AuthFailure, Authorize, Caller, ModelChangeError, ModelRegistry, router,
};
use tollgate_governance::admission::{AdmitRequest, Estimate, Limits};
use tollgate_governance::pricing::{ModelPrice, PriceOverrides, PriceTable, Usage};
use tollgate_governance::runtime::{CallOutcome, Governance, GovernanceOptions, RequestFacts};
use tollgate_governance::store::{GovernanceStore, SpendLogRow, SqliteStore, hash_key};
use tower::ServiceExt;

/// `Bearer admin` is the master key; `Bearer sk-…` a virtual key resolved from the cache.
pub struct StubAuth {
    pub gov: Arc<Governance>,
}

impl Authorize for StubAuth {
    fn caller(&self, h: &HeaderMap) -> Result<Caller, AuthFailure> {
        let bearer = h
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| AuthFailure {
                status: 401,
                error_type: "auth_error",
                message: "Authentication Error, No api key passed in.".into(),
            })?;
        if bearer == "admin" {
            return Ok(Caller::Admin);
        }
        self.gov
            .principal(&hash_key(bearer))
            .map(|p| Caller::Key(Box::new(p)))
            .map_err(|e| AuthFailure {
                status: 401,
                error_type: e.error_type(),
                message: e.to_string(),
            })
    }
}

/// Deployments in a vector; ids `m-1`, `m-2`, … in order of addition.
#[derive(Default)]
pub struct StubModels {
    entries: Mutex<Vec<Value>>,
    next: Mutex<u32>,
}

#[async_trait::async_trait]
impl ModelRegistry for StubModels {
    fn list(&self) -> Vec<Value> {
        self.entries.lock().unwrap().clone()
    }

    async fn add(&self, mut entry: Value, _actor: &str) -> Result<Value, ModelChangeError> {
        if entry.get("model_name").and_then(Value::as_str).is_none() {
            return Err(ModelChangeError::Invalid("model_name is required".into()));
        }
        let mut n = self.next.lock().unwrap();
        *n += 1;
        entry["model_info"] = json!({"id": format!("m-{n}")});
        self.entries.lock().unwrap().push(entry.clone());
        Ok(entry)
    }

    async fn delete(&self, id: &str) -> Result<(), ModelChangeError> {
        if id == "config-1" {
            return Err(ModelChangeError::Invalid(
                "config-1 is defined in the config file".into(),
            ));
        }
        let mut v = self.entries.lock().unwrap();
        let before = v.len();
        v.retain(|e| e["model_info"]["id"] != id);
        if v.len() == before {
            return Err(ModelChangeError::NotFound(id.to_owned()));
        }
        Ok(())
    }

    async fn update(
        &self,
        id: &str,
        patch: Value,
        _actor: &str,
    ) -> Result<Value, ModelChangeError> {
        let mut v = self.entries.lock().unwrap();
        let e = v
            .iter_mut()
            .find(|e| e["model_info"]["id"] == id)
            .ok_or_else(|| ModelChangeError::NotFound(id.to_owned()))?;
        if let Some(name) = patch.get("model_name") {
            e["model_name"] = name.clone();
        }
        Ok(e.clone())
    }
}

/// The router with its governance.
pub struct H {
    pub app: axum::Router,
    pub gov: Arc<Governance>,
    pub store: SqliteStore,
}

/// Global budget of the harness (`litellm_settings.max_budget`), USD.
pub const GLOBAL_MAX_BUDGET: f64 = 100.0;

impl H {
    pub async fn new() -> H {
        let store = SqliteStore::open(":memory:").await.unwrap();
        store.migrate().await.unwrap();
        let mut prices = PriceTable::new();
        prices.insert(
            "mock-gpt",
            ModelPrice {
                input_per_token: 1e-6,
                output_per_token: 2e-6,
                ..ModelPrice::default()
            },
        );
        let options = GovernanceOptions {
            global: Limits {
                max_budget: Some(GLOBAL_MAX_BUDGET),
                ..Limits::default()
            },
            ..GovernanceOptions::default()
        };
        let gov = Arc::new(
            Governance::open(Arc::new(store.clone()), prices, options)
                .await
                .unwrap(),
        );
        let ctx = AdminContext {
            gov: Arc::clone(&gov),
            auth: Arc::new(StubAuth {
                gov: Arc::clone(&gov),
            }),
            models: Arc::new(StubModels::default()),
            write_behind: Arc::new(gov.write_behind(100)),
        };
        H {
            app: router(Arc::new(ctx)),
            gov,
            store,
        }
    }

    /// One request; the body parsed as JSON (`Null` when empty).
    pub async fn call(
        &self,
        method: &str,
        uri: &str,
        auth: Option<&str>,
        body: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut b = Request::builder().method(method).uri(uri);
        if let Some(a) = auth {
            b = b.header("authorization", format!("Bearer {a}"));
        }
        if body.is_some() {
            b = b.header("content-type", "application/json");
        }
        let req = b
            .body(Body::from(body.unwrap_or_default().to_owned()))
            .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&bytes)))
        };
        (status, v)
    }

    /// `POST` as the master key.
    pub async fn post(&self, uri: &str, body: Value) -> (StatusCode, Value) {
        self.call("POST", uri, Some("admin"), Some(&body.to_string()))
            .await
    }

    /// `GET` as the master key.
    pub async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call("GET", uri, Some("admin"), None).await
    }

    /// A new key via `/key/generate` (200 asserted); returns (plaintext, hash).
    pub async fn key(&self, body: Value) -> (String, String) {
        let (s, v) = self.post("/key/generate", body).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        (
            v["key"].as_str().unwrap().to_owned(),
            v["token_id"].as_str().unwrap().to_owned(),
        )
    }

    /// Admits and settles one `mock-gpt` call of `prompt` + `completion` tokens on the key with
    /// hash `hash` (cost = prompt × 1e-6 + completion × 2e-6 USD), logging it as `request_id`.
    pub async fn charge(
        &self,
        hash: &str,
        request_id: &str,
        prompt: u64,
        completion: u64,
        end_user: Option<&str>,
    ) -> f64 {
        let g = &self.gov;
        let p = g.principal(hash).unwrap();
        let facts = RequestFacts {
            model_group: "mock-gpt",
            end_user,
            ..RequestFacts::default()
        };
        let scopes = g.scopes(Some(&p), facts).unwrap();
        let price = g.price(None, "mock-gpt", &PriceOverrides::default());
        let est = Estimate::new(
            g.admission().config(),
            price.as_ref(),
            prompt,
            Some(completion),
        );
        let log = SpendLogRow {
            request_id: request_id.into(),
            call_type: "acompletion".into(),
            api_key: hash.into(),
            model: "mock-gpt".into(),
            model_group: Some("mock-gpt".into()),
            team_id: p.key.team_id.clone(),
            user: p.key.user_id.clone(),
            end_user: end_user.map(str::to_owned),
            start_time: Utc::now(),
            end_time: Utc::now(),
            ..SpendLogRow::default()
        };
        let charge = g
            .admit(
                AdmitRequest {
                    request_id: request_id.into(),
                    attempt: 0,
                    scopes,
                    estimate: est,
                },
                price,
                log,
            )
            .await
            .unwrap();
        g.settle(
            charge,
            CallOutcome {
                usage: Some(Usage::new(prompt, completion)),
                success: true,
                end_time: Utc::now(),
                completion_start: None,
            },
        )
        .unwrap()
        .cost_usd
    }
}

/// `v` without the object fields `drop` (volatile timestamps), recursively at the top level.
pub fn without(v: &Value, drop: &[&str]) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        for d in drop {
            o.remove(*d);
        }
    }
    v
}

/// LiteLLM's error JSON.
pub fn error(message: &str, ty: &str, code: u16) -> Value {
    json!({"error": {"message": message, "type": ty, "param": null, "code": code.to_string()}})
}

impl H {
    /// Whether a `mock-gpt` request on the key with hash `hash` would be admitted now (the
    /// reservation is released unsettled).
    pub async fn admits(&self, hash: &str) -> bool {
        let g = &self.gov;
        let Ok(p) = g.principal(hash) else {
            return false;
        };
        let facts = RequestFacts {
            model_group: "mock-gpt",
            ..RequestFacts::default()
        };
        let scopes = g.scopes(Some(&p), facts).unwrap();
        let est = Estimate::new(g.admission().config(), None, 10, Some(10));
        g.admission()
            .admit(AdmitRequest {
                request_id: "probe".into(),
                attempt: 0,
                scopes,
                estimate: est,
            })
            .await
            .is_ok()
    }
}
