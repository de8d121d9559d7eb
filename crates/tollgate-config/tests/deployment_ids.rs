//! Deployment ids: stable across restarts, key order and credential rotation.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

use tollgate_config::load_str;

const A: &str = "\
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: openai/gpt-4o
      api_key: os.environ/OPENAI_API_KEY
      timeout: 30
      extra_headers: {X-Team: a}
";

/// Same params, keys in another order, flow style.
const A_REORDERED: &str = "\
model_list:
  - litellm_params: {extra_headers: {X-Team: a}, timeout: 30, api_key: os.environ/OPENAI_API_KEY, model: openai/gpt-4o}
    model_name: gpt-4o
";

fn id(yaml: &str, key: &str) -> String {
    let key = key.to_string();
    let l = load_str(yaml, "config.yaml", &move |k| {
        (k == "OPENAI_API_KEY" || k == "OTHER_KEY").then(|| key.clone())
    })
    .unwrap();
    l.config.model_list[0].deployment_id()
}

#[test]
fn same_file_same_id() {
    let first = id(A, "sk-aaaaaaaaaaaaaaaaaaaa");
    assert_eq!(first.len(), 16);
    assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(first, id(A, "sk-aaaaaaaaaaaaaaaaaaaa"), "restart");
    assert_eq!(
        first,
        id(A_REORDERED, "sk-aaaaaaaaaaaaaaaaaaaa"),
        "key order"
    );
    assert_eq!(
        first,
        id(A, "sk-rotated-bbbbbbbbbbbb"),
        "credential rotation"
    );
}

#[test]
fn edits_change_the_id() {
    let base = id(A, "sk-aaaaaaaaaaaaaaaaaaaa");
    for edited in [
        A.replace("timeout: 30", "timeout: 60"),
        A.replace("X-Team: a", "X-Team: b"),
        A.replace("OPENAI_API_KEY", "OTHER_KEY"),
        A.replace("model_name: gpt-4o", "model_name: gpt-4o-b"),
    ] {
        assert_ne!(base, id(&edited, "sk-aaaaaaaaaaaaaaaaaaaa"), "{edited}");
    }
}

#[test]
fn model_info_id_wins() {
    let y = format!("{A}    model_info: {{id: my-id}}\n");
    assert_eq!(id(&y, "sk-aaaaaaaaaaaaaaaaaaaa"), "my-id");
}

#[test]
fn identical_entries_share_an_id_with_a_warning() {
    let y = "model_list:\n  - model_name: m\n    litellm_params: {model: openai/m}\n  - model_name: m\n    litellm_params: {model: openai/m}\n";
    let l = load_str(y, "config.yaml", &|_| None).unwrap();
    assert_eq!(
        l.config.model_list[0].deployment_id(),
        l.config.model_list[1].deployment_id()
    );
    assert!(
        l.warnings
            .iter()
            .any(|w| w.starts_with("config.yaml:4:5: model_list[1]: identical to model_list[0]")),
        "{:?}",
        l.warnings
    );
}
