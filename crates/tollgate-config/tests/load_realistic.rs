//! Loads a realistic LiteLLM config end to end.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

use std::collections::HashMap;
use std::path::Path;

use tollgate_config::{LoadedConfig, load_path};

const CANARY_AZURE: &str = "azure-CANARY-key-0000aaaa";
const CANARY_OPENAI: &str = "sk-CANARY-openai-1111bbbb";
const CANARY_MASTER: &str = "sk-CANARY-master-2222cccc";
const CANARY_AWS: &str = "aws-CANARY-secret-3333dddd";
const CANARY_REDIS: &str = "redis-CANARY-pw-4444eeee";
const CANARY_HEADER: &str = "Bearer CANARY-header-5555ffff";
const CANARY_NESTED: &str = "nested-CANARY-token-6666";
const CANARY_DB: &str = "postgres://u:CANARYDBPW@127.0.0.1:5432/litellm";

fn env() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("AZURE_API_KEY", CANARY_AZURE),
        ("OPENAI_API_KEY", CANARY_OPENAI),
        ("ANTHROPIC_API_KEY", "sk-ant-CANARY-7777"),
        ("AWS_ACCESS_KEY_ID", "AKIACANARY0000000000"),
        ("AWS_SECRET_ACCESS_KEY", CANARY_AWS),
        ("LITELLM_MASTER_KEY", CANARY_MASTER),
        ("REDIS_PASSWORD", CANARY_REDIS),
        ("OPENAI_HEADER_TOKEN", CANARY_HEADER),
        ("NESTED_TOKEN", CANARY_NESTED),
        ("NESTED_ITEM", "process-env-loses"),
        ("DATABASE_URL", CANARY_DB),
    ])
}

fn load() -> LoadedConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/litellm_realistic.yaml");
    let vars = env();
    load_path(&path, &|k| vars.get(k).map(|v| v.to_string())).unwrap()
}

#[test]
fn typed_values() {
    let l = load();
    let c = &l.config;
    assert_eq!(c.model_list.len(), 6);
    assert_eq!(
        c.model_groups(),
        vec![
            "gpt-4o",
            "claude-sonnet",
            "bedrock-claude",
            "local-llama",
            "*"
        ]
    );

    let az = &c.model_list[0];
    let p = &az.litellm_params;
    assert_eq!(
        (p.provider(), p.upstream_model()),
        ("azure", "my-deployment")
    );
    assert_eq!(p.api_base.as_deref(), Some("https://x.openai.azure.com/"));
    assert_eq!(p.api_key.as_ref().unwrap().expose(), CANARY_AZURE);
    assert_eq!(p.api_version.as_deref(), Some("2024-06-01"));
    assert_eq!((p.rpm, p.tpm), (Some(480), Some(100_000)));
    assert_eq!((p.weight, p.order), (Some(2.0), Some(1)));
    assert_eq!(
        (p.timeout, p.stream_timeout, p.max_retries),
        (Some(300.0), Some(60.0), Some(0))
    );
    assert_eq!(p.input_cost_per_token, Some(0.000001));
    assert_eq!(p.output_cost_per_token, Some(0.000002));
    assert_eq!(p.tags, vec!["free"]);
    assert_eq!(p.mock_response, Some(serde_json::json!("hi")));
    assert_eq!(az.deployment_id(), "my-stable-id");
    assert_eq!(az.model_info.mode.as_deref(), Some("chat"));
    assert_eq!(az.model_info.base_model.as_deref(), Some("gpt-4o"));
    assert_eq!(az.model_info.max_input_tokens, Some(128_000));
    assert_eq!(az.model_info.access_groups, vec!["beta"]);

    let oa = &c.model_list[1].litellm_params;
    assert_eq!((oa.provider(), oa.upstream_model()), ("openai", "gpt-4o"));
    assert_eq!(oa.timeout, Some(45.5), "numeric string timeout");
    assert_eq!(oa.extra_headers["X-Team"], "platform");
    assert_eq!(oa.extra_headers["Authorization"], CANARY_HEADER);
    assert_eq!(oa.request_defaults()["temperature"], serde_json::json!(0.2));
    // Substitution reaches nested maps and lists of unknown keys; environment_variables win
    // over the process environment.
    assert_eq!(
        oa.extra["metadata_defaults"],
        serde_json::json!({"nested": {"token": CANARY_NESTED, "list": ["from-env-section", "literal"]}})
    );

    let an = &c.model_list[2].litellm_params;
    assert_eq!(an.provider(), "anthropic");
    assert_eq!(an.extra["max_tokens"], serde_json::json!(4096));
    let br = &c.model_list[3].litellm_params;
    assert_eq!(br.provider(), "bedrock");
    assert_eq!(
        br.upstream_model(),
        "converse/anthropic.claude-3-5-sonnet-20240620-v1:0"
    );
    assert_eq!(
        br.aws_secret_access_key.as_ref().unwrap().expose(),
        CANARY_AWS
    );
    assert_eq!(br.aws_region_name.as_deref(), Some("us-east-1"));
    let vl = &c.model_list[4].litellm_params;
    assert_eq!(vl.upstream_model(), "meta-llama/Llama-3.1-8B-Instruct");
    assert!(
        vl.request_defaults().is_empty(),
        "pricing keys are not request defaults"
    );
    let wc = &c.model_list[5];
    assert_eq!(
        (wc.model_name.as_str(), wc.litellm_params.upstream_model()),
        ("*", "*")
    );

    let ls = &c.litellm_settings;
    assert_eq!(ls.drop_params, Some(true));
    assert_eq!(ls.request_timeout, Some(600.0));
    assert_eq!(ls.num_retries, Some(2));
    assert_eq!(ls.callbacks, vec!["prometheus"]);
    assert_eq!(
        tollgate_config::fallbacks_for(&ls.fallbacks, "gpt-4o"),
        vec!["claude-sonnet"]
    );
    assert_eq!(ls.cache, Some(true));
    assert_eq!(ls.cache_params.as_ref().unwrap()["password"], CANARY_REDIS);

    let r = &c.router_settings;
    assert_eq!(r.routing_strategy.as_deref(), Some("simple-shuffle"));
    assert_eq!(
        (r.num_retries, r.allowed_fails, r.cooldown_time),
        (Some(3), Some(3), Some(30.0))
    );
    assert_eq!(
        r.redis_host.as_deref(),
        Some("redis.internal"),
        "from environment_variables"
    );
    assert_eq!(r.redis_port, Some(6379));
    assert_eq!(r.redis_password.as_ref().unwrap().expose(), CANARY_REDIS);
    assert_eq!(r.model_group_alias["gpt-4"].group(), "gpt-4o");

    let g = &c.general_settings;
    assert_eq!(g.master_key.as_ref().unwrap().expose(), CANARY_MASTER);
    assert_eq!(g.database_url.as_ref().unwrap().expose(), CANARY_DB);
    assert_eq!(g.max_request_size_mb, Some(10.0));
    assert_eq!(g.extra["alerting"], serde_json::json!(["slack"]));
    assert_eq!(l.master_key.as_ref().unwrap().expose(), CANARY_MASTER);
    assert_eq!(l.master_key_source, Some("general_settings.master_key"));

    assert_eq!(c.environment_variables["REDIS_HOST"], "redis.internal");
    assert!(c.extra.contains_key("guardrails") && c.extra.contains_key("mcp_servers"));
}

#[test]
fn unimplemented_keys_listed() {
    let l = load();
    let keys = l.config.unimplemented_keys();
    for k in [
        "guardrails",
        "mcp_servers",
        "model_list[].litellm_params.input_cost_per_second",
        "litellm_settings.callbacks",
        "litellm_settings.cache",
        "general_settings.alerting",
        "litellm_settings.drop_params",
    ] {
        assert!(keys.contains(&k.to_string()), "missing {k} in {keys:?}");
    }
    // acted on: the Redis server of the shared counters
    for k in [
        "litellm_settings.cache_params",
        "router_settings.redis_host",
    ] {
        assert!(!keys.contains(&k.to_string()), "{k} reported in {keys:?}");
    }
    for k in [
        "environment_variables",
        "litellm_settings.request_timeout",
        "general_settings.master_key",
        "general_settings.max_request_size_mb",
        "model_list[].model_info.id",
        "model_list[].litellm_params.temperature",
        "router_settings.model_group_alias",
        "router_settings.routing_strategy",
        "litellm_settings.num_retries",
        "litellm_settings.fallbacks",
        "model_list[].litellm_params.max_retries",
        "model_list[].model_info.base_model",
        "model_list[].model_info.access_groups",
        "general_settings.database_url",
        "model_list[].litellm_params.input_cost_per_token",
    ] {
        assert!(
            !keys.contains(&k.to_string()),
            "{k} is implemented: {keys:?}"
        );
    }
    // File order is kept.
    let pos = |k: &str| keys.iter().position(|x| x == k).unwrap();
    assert!(pos("guardrails") < pos("mcp_servers"), "{keys:?}");
    // Listed once, by describe(), not repeated in the warnings.
    assert!(
        !l.warnings
            .iter()
            .any(|w| w.contains("litellm_settings.callbacks")),
        "{:?}",
        l.warnings
    );
    assert!(
        l.config
            .describe()
            .contains("\n  litellm_settings.callbacks\n")
    );
}

#[test]
fn secrets_never_printed() {
    let l = load();
    let outputs = [
        format!("{:?}", l),
        format!("{:#?}", l.config),
        l.describe(),
        l.config.describe(),
        l.warnings.join("\n"),
        serde_json::to_string(&l.config).unwrap(),
    ];
    for out in &outputs {
        assert!(!out.contains("CANARY"), "secret leaked:\n{out}");
    }
    // Token counts are not credentials: they stay readable.
    assert!(
        outputs[1].contains("\"max_tokens\": Number(4096)"),
        "{}",
        outputs[1]
    );
    let d = l.describe();
    // Masks keep the last four characters of long keys.
    assert!(d.contains("sk-...bbbb"), "{d}");
    assert!(d.contains("****aaaa"), "{d}");
    assert!(
        d.contains("id my-stable-id  provider azure  upstream my-deployment"),
        "{d}"
    );
    assert!(d.contains("timeout 300 s"), "{d}");
    assert!(d.contains("rpm 480  tpm 100000"), "{d}");
    assert!(
        d.contains("master_key = sk-...cccc (from general_settings.master_key)"),
        "{d}"
    );
    assert!(d.contains("litellm_settings.callbacks"), "{d}");
}

#[test]
fn deployment_ids_stable_across_loads_and_distinct() {
    let a = load();
    let b = load();
    let ids_a: Vec<String> = a
        .config
        .model_list
        .iter()
        .map(|e| e.deployment_id())
        .collect();
    let ids_b: Vec<String> = b
        .config
        .model_list
        .iter()
        .map(|e| e.deployment_id())
        .collect();
    assert_eq!(ids_a, ids_b);
    let mut uniq = ids_a.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), ids_a.len(), "{ids_a:?}");
    assert!(ids_a[1..].iter().all(|id| id.len() == 16));
}
