//! Errors name the key path, line and column; warnings for the soft cases.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

use std::collections::HashMap;

use tollgate_config::{ErrorKind, load_str};

fn env(name: &str) -> Option<String> {
    HashMap::from([
        ("OPENAI_API_KEY", "sk-CANARY-env-key-9999"),
        ("MODEL_FROM_ENV", "openai/gpt-4o-mini"),
    ])
    .get(name)
    .map(|v| v.to_string())
}

fn err(yaml: &str) -> tollgate_config::ConfigError {
    load_str(yaml, "config.yaml", &env).unwrap_err()
}

const THREE: &str = "\
model_list:
  - model_name: a
    litellm_params:
      model: openai/a
  - model_name: b
    litellm_params:
      model: openai/b
      rpm: 10
  - model_name: c
    litellm_params:
      api_base: http://127.0.0.1:9/v1
      rpm: 5
";

#[test]
fn missing_model_in_third_entry() {
    let e = err(THREE);
    assert_eq!(e.kind, ErrorKind::Type);
    assert_eq!(
        e.to_string(),
        "config.yaml:10:5: model_list[2].litellm_params: missing field `model`"
    );
}

#[test]
fn missing_model_name() {
    let e = err("model_list:\n  - litellm_params:\n      model: openai/a\n");
    assert_eq!(
        e.to_string(),
        "config.yaml:2:5: model_list[0]: missing field `model_name`"
    );
}

#[test]
fn rpm_not_a_number() {
    let y = THREE.replace("rpm: 10", "rpm: \"abc\"").replace(
        "      api_base: http://127.0.0.1:9/v1\n",
        "      model: openai/c\n",
    );
    let e = err(&y);
    assert_eq!(e.kind, ErrorKind::Type);
    let s = e.to_string();
    assert!(
        s.starts_with(
            "config.yaml:8:12: model_list[1].litellm_params.rpm: invalid value: string \"abc\""
        ),
        "{s}"
    );
    assert_eq!((e.line, e.column), (Some(8), Some(12)));
}

#[test]
fn negative_rpm_and_timeout() {
    let e = err(
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      rpm: -3\n",
    );
    assert_eq!(e.line, Some(5));
    assert!(
        e.to_string().contains(
            "model_list[0].litellm_params.rpm: invalid value: -3, expected a non-negative integer"
        ),
        "{e}"
    );
    let e = err(
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      timeout: -1\n",
    );
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert_eq!(
        e.to_string(),
        "config.yaml:5:16: model_list[0].litellm_params.timeout: must be > 0 seconds, got -1"
    );
}

#[test]
fn bad_indentation_is_a_syntax_error_with_line() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n     api_base: http://x\n";
    let e = err(y);
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.line, Some(5), "{e}");
    assert_eq!(
        e.to_string(),
        "config.yaml:5:6: did not find expected key, while parsing a block mapping at line 2 column 5"
    );
}

#[test]
fn unknown_provider_names_entry_and_line() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n  - model_name: weird\n    litellm_params:\n      model: nosuchprovider/x\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    assert_eq!(l.unserved.len(), 1);
    let e = &l.unserved[0];
    assert_eq!(e.kind, ErrorKind::Invalid);
    let s = e.to_string();
    assert!(
        s.starts_with("config.yaml:7:14: model_list[1].litellm_params.model: unknown provider prefix 'nosuchprovider' in model 'nosuchprovider/x' (model group 'weird')"),
        "{s}"
    );
}

#[test]
fn unset_env_in_model_is_an_error() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: os.environ/NOT_SET_MODEL\n";
    let e = err(y);
    assert_eq!(e.kind, ErrorKind::UnsetEnv);
    assert_eq!(
        e.to_string(),
        "config.yaml:4:14: model_list[0].litellm_params.model: environment variable NOT_SET_MODEL (from os.environ/NOT_SET_MODEL) is not set"
    );
    // Set, it resolves.
    let y = y.replace("NOT_SET_MODEL", "MODEL_FROM_ENV");
    let l = load_str(&y, "config.yaml", &env).unwrap();
    assert_eq!(
        l.config.model_list[0].litellm_params.upstream_model(),
        "gpt-4o-mini"
    );
}

#[test]
fn unset_env_in_api_key_is_a_warning() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      api_key: os.environ/NOT_SET_KEY\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    assert!(l.config.model_list[0].litellm_params.api_key.is_none());
    assert!(
        l.warnings.iter().any(|w| w
            == "config.yaml:5:7: model_list[0].litellm_params.api_key: environment variable NOT_SET_KEY (from os.environ/NOT_SET_KEY) is not set; the key is left unset"),
        "{:?}",
        l.warnings
    );
}

#[test]
fn unset_env_in_master_key_is_an_error() {
    let e = err("general_settings:\n  master_key: os.environ/NOT_SET_MASTER\n");
    assert_eq!(e.kind, ErrorKind::UnsetEnv);
    assert_eq!(e.line, Some(2));
}

#[test]
fn hosted_vllm_needs_api_base() {
    let e = err(
        "model_list:\n  - model_name: v\n    litellm_params:\n      model: hosted_vllm/llama\n",
    );
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.to_string().contains(
            "model_list[0].litellm_params.model: provider 'hosted_vllm' has no default endpoint"
        ),
        "{e}"
    );
    assert_eq!(e.line, Some(4));
}

#[test]
fn duplicate_model_info_id() {
    let y = "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\n    model_info: {id: x1}\n  - model_name: b\n    litellm_params: {model: openai/b}\n    model_info:\n      id: x1\n";
    let e = err(y);
    assert_eq!(
        e.to_string(),
        "config.yaml:8:11: model_list[1].model_info.id: duplicate deployment id 'x1' (also model_list[0])"
    );
}

#[test]
fn secret_values_are_scrubbed_from_errors() {
    // A credential pasted into a numeric field by mistake must not be echoed back.
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      rpm: os.environ/OPENAI_API_KEY\n";
    let e = err(y);
    let s = format!("{e} {e:?}");
    assert!(!s.contains("CANARY"), "{s}");
    assert!(s.contains("model_list[0].litellm_params.rpm"), "{s}");
}

#[test]
fn empty_file_and_missing_model_list_are_valid() {
    for y in [
        "",
        "   \n# only a comment\n",
        "litellm_settings:\n  drop_params: true\n",
        "model_list:\n",
    ] {
        let l = load_str(y, "config.yaml", &env).unwrap();
        assert!(l.config.model_list.is_empty());
        assert!(
            l.warnings.iter().any(|w| w.contains("no model")),
            "{y:?}: {:?}",
            l.warnings
        );
    }
}

#[test]
fn top_level_must_be_a_mapping() {
    let e = err("- a\n- b\n");
    assert_eq!(e.kind, ErrorKind::Type);
}

#[test]
fn wildcards_are_valid() {
    let y = "model_list:\n  - model_name: \"*\"\n    litellm_params: {model: \"*\"}\n  - model_name: \"openai/*\"\n    litellm_params: {model: \"openai/*\", api_key: os.environ/OPENAI_API_KEY}\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    assert_eq!(l.config.model_list[0].litellm_params.provider(), "*");
    assert_eq!(l.config.model_list[1].litellm_params.provider(), "openai");
}

#[test]
fn master_key_falls_back_to_env() {
    let l = load_str("model_list: []\n", "c.yaml", &|k| {
        (k == "LITELLM_MASTER_KEY").then(|| "sk-from-env-abcdef".to_string())
    })
    .unwrap();
    assert_eq!(l.master_key.unwrap().expose(), "sk-from-env-abcdef");
    assert_eq!(l.master_key_source, Some("LITELLM_MASTER_KEY"));
    // environment_variables can define it too.
    let l = load_str(
        "environment_variables:\n  LITELLM_MASTER_KEY: sk-file-env-123456\n",
        "c.yaml",
        &|_| None,
    )
    .unwrap();
    assert_eq!(l.master_key.unwrap().expose(), "sk-file-env-123456");
    let l = load_str(
        "general_settings: {master_key: sk-1234}\n",
        "c.yaml",
        &|_| Some("sk-env-loses".into()),
    )
    .unwrap();
    assert_eq!(l.master_key.unwrap().expose(), "sk-1234");
}

#[test]
fn yaml_merge_keys_and_anchors() {
    let y = "\
defaults: &defaults
  api_key: os.environ/OPENAI_API_KEY
  timeout: 30
model_list:
  - model_name: a
    litellm_params:
      <<: *defaults
      model: openai/a
";
    let l = load_str(y, "config.yaml", &env).unwrap();
    let p = &l.config.model_list[0].litellm_params;
    assert_eq!(p.timeout, Some(30.0));
    assert_eq!(
        p.api_key.as_ref().unwrap().expose(),
        "sk-CANARY-env-key-9999"
    );
    assert!(
        l.config
            .unimplemented_keys()
            .contains(&"defaults".to_string())
    );
}

#[test]
fn load_path_reports_missing_file() {
    let e = tollgate_config::load_path(std::path::Path::new("/nonexistent/tollgate.yaml"), &env)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Io);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/tollgate.yaml: cannot read config file"),
        "{e}"
    );
}

#[test]
fn shape_errors_are_located() {
    let cases = [
        (
            "model_list:\n  - model_name: a\n    litellm_params: null\n",
            "config.yaml:3:5: model_list[0].litellm_params: missing field `model`",
        ),
        (
            "model_list: {}\n",
            "config.yaml:1:13: model_list: invalid type: map, expected a sequence",
        ),
        (
            "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a, timeout: [1]}\n",
            "config.yaml:3:48: model_list[0].litellm_params.timeout: invalid type: sequence, expected a number or a numeric string",
        ),
        (
            "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\n    model_info: {max_input_tokens: lots}\n",
            "config.yaml:4:36: model_list[0].model_info.max_input_tokens: invalid value: string \"lots\", expected a number or a numeric string",
        ),
        (
            "litellm_settings:\n  fallbacks: [{a: {b: c}}]\n",
            "config.yaml:2:19: litellm_settings.fallbacks[0].a: invalid type: map, expected a list of strings or a single string",
        ),
        (
            "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      api_key: [sk-CANARY-listed-key]\n",
            "config.yaml:5:16: model_list[0].litellm_params.api_key: invalid type: sequence, expected a string (secret value)",
        ),
        (
            "litellm_settings:\n  drop_params: maybe\n",
            "config.yaml:2:16: litellm_settings.drop_params: invalid value: string \"maybe\", expected a boolean (true/false, yes/no, on/off)",
        ),
    ];
    for (yaml, want) in cases {
        assert_eq!(err(yaml).to_string(), want, "{yaml}");
    }
}

#[test]
fn pyyaml_style_scalars_are_accepted() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: azure/a\n      api_base: https://a.example/\n      api_version: 2024-06-01\n      input_cost_per_token: 1e-6\n      rpm: \"60\"\n      max_retries: 2.0\nlitellm_settings:\n  drop_params: \"yes\"\n  callbacks: prometheus\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    let p = &l.config.model_list[0].litellm_params;
    assert_eq!(p.api_version.as_deref(), Some("2024-06-01"));
    assert_eq!(p.input_cost_per_token, Some(1e-6));
    assert_eq!((p.rpm, p.max_retries), (Some(60), Some(2)));
    assert_eq!(l.config.litellm_settings.drop_params, Some(true));
    assert_eq!(l.config.litellm_settings.callbacks, vec!["prometheus"]);
}

#[test]
fn litellm_provider_not_served_loads_and_is_listed_as_unserved() {
    let y = "model_list:\n  - model_name: sm\n    litellm_params:\n      model: sagemaker/my-endpoint\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    assert_eq!(
        l.config.model_list[0].litellm_params.provider(),
        "sagemaker"
    );
    let unserved: Vec<String> = l.unserved.iter().map(ToString::to_string).collect();
    assert_eq!(
        unserved,
        [
            "config.yaml:4:14: model_list[0].litellm_params.model: provider 'sagemaker' (model 'sagemaker/my-endpoint', model group 'sm') is not served by Tollgate yet"
        ]
    );
    assert!(
        !l.warnings.iter().any(|w| w.contains("sagemaker")),
        "listed once, as unserved: {:?}",
        l.warnings
    );
    // A typo of a served provider is listed the same way, with the name it is a typo of.
    let l = load_str(
        "model_list:\n  - model_name: sm\n    litellm_params:\n      model: antropic/claude\n",
        "config.yaml",
        &env,
    )
    .unwrap();
    let listed: Vec<String> = l.unserved.iter().map(ToString::to_string).collect();
    assert_eq!(
        listed,
        [
            "config.yaml:4:14: model_list[0].litellm_params.model: unknown provider prefix 'antropic' in model 'antropic/claude' (model group 'sm'): did you mean 'anthropic'?"
        ]
    );
}

#[test]
fn internal_litellm_params_are_not_request_defaults() {
    let y = "model_list:\n  - model_name: m\n    litellm_params:\n      model: openai/m\n      mock_timeout: true\n      region_name: eu\n      input_cost_per_second: 0.1\n      temperature: 0.5\n      reasoning_effort: low\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    let d = l.config.model_list[0].litellm_params.request_defaults();
    assert_eq!(
        serde_json::Value::Object(d),
        serde_json::json!({"temperature": 0.5, "reasoning_effort": "low"})
    );
    let keys = l.config.unimplemented_keys();
    assert_eq!(
        keys,
        vec![
            "model_list[].litellm_params.mock_timeout",
            "model_list[].litellm_params.region_name",
            "model_list[].litellm_params.input_cost_per_second"
        ]
    );
}

#[test]
fn unset_variables_warn_once_per_variable() {
    let mut y = String::from("model_list:\n");
    for i in 0..3 {
        y.push_str(&format!(
            "  - model_name: m{i}\n    litellm_params:\n      model: openai/m{i}\n      api_key: os.environ/SHARED_UNSET\n"
        ));
    }
    let l = load_str(&y, "config.yaml", &env).unwrap();
    let w: Vec<&String> = l
        .warnings
        .iter()
        .filter(|w| w.contains("SHARED_UNSET"))
        .collect();
    assert_eq!(
        w,
        vec![
            "config.yaml:5:7: model_list[0].litellm_params.api_key: environment variable SHARED_UNSET (from os.environ/SHARED_UNSET) is not set; the key is left unset (and 2 more keys)"
        ]
    );
}

#[test]
fn many_warnings_stay_cheap_and_keep_their_key_path() {
    // Locating a warning re-parses the file; past 50 warnings only the key path is given.
    let mut y = String::from("model_list:\n");
    for i in 0..200 {
        y.push_str(&format!(
            "  - model_name: m{i}\n    litellm_params:\n      model: openai/m{i}\n      api_key: os.environ/UNSET_{i}\n"
        ));
    }
    let l = load_str(&y, "config.yaml", &env).unwrap();
    let unset: Vec<&String> = l.warnings.iter().filter(|w| w.contains("UNSET_")).collect();
    assert_eq!(unset.len(), 200);
    assert!(
        unset[0].starts_with("config.yaml:5:7: model_list[0].litellm_params.api_key:"),
        "{}",
        unset[0]
    );
    assert!(
        unset[49].starts_with("config.yaml:201:7: model_list[49]."),
        "{}",
        unset[49]
    );
    assert!(
        unset[50].starts_with("config.yaml: model_list[50].litellm_params.api_key:"),
        "{}",
        unset[50]
    );
}

#[test]
fn repeated_keys_load_like_pyyaml_with_a_warning() {
    let y = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/a\n      rpm: 1\n      rpm: 2\n";
    let l = load_str(y, "config.yaml", &env).unwrap();
    assert_eq!(l.config.model_list[0].litellm_params.rpm, Some(2));
    assert!(
        l.warnings.iter().any(|w| w.starts_with(
            "config.yaml:5:7: model_list[0].litellm_params.rpm: key appears more than once in its mapping; the last value is used"
        )),
        "{:?}",
        l.warnings
    );
}
