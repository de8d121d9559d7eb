use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn new_body_becomes_a_row_and_an_entry() {
    let env = |k: &str| (k == "UP_KEY").then(|| "sk-from-env".to_owned());
    let s = parse_new(
        json!({
            "model_name": "g",
            "litellm_params": {"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "api_key": "os.environ/UP_KEY", "rpm": 3},
            "model_info": {"id": "my-id", "mode": "chat"},
        }),
        "admin-user",
        &env,
    )
    .unwrap();
    assert_eq!(s.row.model_id, "my-id");
    // stored as given (the reference, not the value)
    assert_eq!(s.row.litellm_params["api_key"], "os.environ/UP_KEY");
    assert_eq!(s.row.model_info, json!({"id": "my-id", "mode": "chat"}));
    assert_eq!(s.row.created_by.as_deref(), Some("admin-user"));
    let p = &s.entry.litellm_params;
    assert_eq!(p.api_key.as_ref().map(|k| k.expose()), Some("sk-from-env"));
    assert_eq!(p.rpm, Some(3));
    assert_eq!(s.entry.deployment_id(), "my-id");
    let out = stored_row(&s.row);
    assert_eq!(
        out["litellm_params"],
        json!({"model": "openai/x", "api_base": "http://127.0.0.1:9/v1", "rpm": 3})
    );
    assert_eq!(
        out["model_info"],
        json!({"id": "my-id", "mode": "chat", "db_model": true})
    );
    assert_eq!(out["model_id"], "my-id");
}

#[test]
fn a_missing_id_gets_a_uuid() {
    let s = parse_new(
        json!({"model_name": "g", "litellm_params": {"model": "openai/x"}}),
        "a",
        &no_env,
    )
    .unwrap();
    assert_eq!(s.row.model_id.len(), 36);
    assert_eq!(s.row.model_info["id"], json!(s.row.model_id));
}

#[test]
fn invalid_bodies_are_named() {
    let err = |body: Value| match parse_new(body, "a", &no_env) {
        Err(ModelChangeError::Invalid(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        err(json!({"litellm_params": {"model": "x"}})),
        "model_name is required"
    );
    assert_eq!(
        err(json!({"model_name": "g"})),
        "litellm_params is required: an object with `model`"
    );
    assert_eq!(
        err(json!({"model_name": "g", "litellm_params": {"api_base": "http://h"}})),
        "litellm_params.model is required"
    );
    assert_eq!(
        err(
            json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_base": "not a url"}})
        ),
        "litellm_params.api_base 'not a url' is not an http(s) URL"
    );
    assert_eq!(
        err(
            json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_base": "ftp://u:pw@h/x"}})
        ),
        "litellm_params.api_base 'ftp://u:****@h/x' is not an http(s) URL"
    );
    assert_eq!(
        err(
            json!({"model_name": "g", "litellm_params": {"model": "openai/x", "api_key": "os.environ/NOPE"}})
        ),
        "litellm_params.api_key: environment variable NOPE is not set"
    );
}

#[test]
fn listings_never_carry_credentials() {
    let p = public_params(&json!({
        "model": "openai/x",
        "api_key": "sk-secret-value",
        "aws_secret_access_key": "abc",
        "vertex_credentials": {"k": 1},
        "extra_headers": {"Authorization": "Bearer sk-secret-value", "X-Team": "a"},
        "max_tokens": 5,
    }));
    assert_eq!(
        p,
        json!({
            "model": "openai/x",
            "extra_headers": {"Authorization": "****alue", "X-Team": "a"},
            "max_tokens": 5,
        })
    );
    let mut e = ModelEntry::new("g", "openai/x");
    e.litellm_params.api_key = Some(tollgate_config::Secret::new("sk-secret-value"));
    e.model_info.id = Some("cfg-1".into());
    assert_eq!(
        config_entry_info(&e),
        json!({
            "model_name": "g",
            "litellm_params": {"model": "openai/x"},
            "model_info": {"id": "cfg-1", "db_model": false},
        })
    );
}
