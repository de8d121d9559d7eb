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

/// `model_name_<team>_<uuid v4>`: the prefix, then a 36-character UUID.
fn assert_internal(name: &Value, team: &str) {
    let name = name.as_str().unwrap_or_default();
    let prefix = format!("model_name_{team}_");
    assert!(name.starts_with(&prefix), "{name}");
    assert_eq!(name.len(), prefix.len() + 36, "{name}");
}

#[test]
fn team_deployments_get_an_internal_name_and_keep_the_public_one() {
    let mut b = json!({"model_name": "team-gpt", "litellm_params": {"model": "openai/x"},
        "model_info": {"team_id": "t1"}});
    name_team_model(&mut b);
    assert_internal(&b["model_name"], "t1");
    assert_eq!(b["model_info"]["team_public_model_name"], "team-gpt");
    // An explicit public name wins over model_name.
    let mut b = json!({"model_name": "x", "litellm_params": {"model": "openai/x"},
        "model_info": {"team_id": "t1", "team_public_model_name": "pub"}});
    name_team_model(&mut b);
    assert_eq!(b["model_info"]["team_public_model_name"], "pub");
    // No team: unchanged.
    let mut b = json!({"model_name": "g", "model_info": {"team_id": ""}});
    let before = b.clone();
    name_team_model(&mut b);
    assert_eq!(b, before);
}

#[test]
fn team_updates_keep_the_internal_name_and_rename_the_public_one() {
    let old = ProxyModel {
        model_id: "m1".into(),
        model_name: "model_name_t1_abc".into(),
        model_info: json!({"id": "m1", "team_id": "t1", "team_public_model_name": "team-gpt"}),
        ..ProxyModel::default()
    };
    let mut merged = json!({"model_name": "renamed", "model_info": old.model_info.clone()});
    team_update_names(&mut merged, &old, Some("renamed"));
    assert_eq!(merged["model_name"], "model_name_t1_abc");
    assert_eq!(merged["model_info"]["team_public_model_name"], "renamed");
    let mut merged =
        json!({"model_name": "model_name_t1_abc", "model_info": old.model_info.clone()});
    team_update_names(&mut merged, &old, None);
    assert_eq!(merged["model_info"]["team_public_model_name"], "team-gpt");
    // A global deployment given to a team: a new internal name, its old name public.
    let old = ProxyModel {
        model_id: "m2".into(),
        model_name: "global".into(),
        model_info: json!({"id": "m2"}),
        ..ProxyModel::default()
    };
    let mut merged = json!({"model_name": "global", "model_info": {"id": "m2", "team_id": "t2"}});
    team_update_names(&mut merged, &old, None);
    assert_internal(&merged["model_name"], "t2");
    assert_eq!(merged["model_info"]["team_public_model_name"], "global");
}

#[test]
fn stored_listing_carries_the_row_audit_fields() {
    let t = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let row = ProxyModel {
        model_id: "m1".into(),
        model_name: "g".into(),
        litellm_params: json!({"model": "openai/x", "api_key": "sk-secret"}),
        model_info: json!({"mode": "chat"}),
        created_at: Some(t),
        updated_at: Some(t),
        created_by: Some("u1".into()),
        updated_by: Some("u2".into()),
    };
    assert_eq!(
        stored_info(&row),
        json!({"model_name": "g", "litellm_params": {"model": "openai/x"}, "model_info": {
            "mode": "chat", "id": "m1", "db_model": true,
            "created_at": "2026-01-02T03:04:05.678Z", "updated_at": "2026-01-02T03:04:05.678Z",
            "created_by": "u1", "updated_by": "u2"}})
    );
}
