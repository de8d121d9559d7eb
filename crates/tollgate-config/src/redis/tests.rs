//! Unit tests of [`super::redis_settings`]: each source, the precedence, the errors.

use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| m.get(name).cloned()
}

fn yaml(text: &str) -> Config {
    crate::load_str(text, "config.yaml", &|_| None)
        .unwrap()
        .config
}

fn resolve(c: &Config, pairs: &[(&str, &str)]) -> Option<RedisSettings> {
    redis_settings(c, &env(pairs)).unwrap()
}

fn node(host: &str, port: u16) -> RedisNode {
    RedisNode {
        host: host.into(),
        port,
    }
}

#[test]
fn nothing_configured_is_no_redis() {
    assert_eq!(resolve(&Config::default(), &[]), None);
    // credentials alone name no server
    assert_eq!(
        resolve(&Config::default(), &[("REDIS_PASSWORD", "pw")]),
        None
    );
    let local = yaml("litellm_settings:\n  cache: true\n  cache_params: {type: local}\n");
    assert_eq!(resolve(&local, &[]), None);
}

#[test]
fn env_url_is_used_as_given_and_wins_over_host() {
    let s = resolve(
        &Config::default(),
        &[
            ("REDIS_URL", "rediss://u:CANARY-pw@r.example:6380/2"),
            ("REDIS_HOST", "ignored"),
            ("REDIS_PASSWORD", "ignored-too"),
        ],
    )
    .unwrap();
    assert_eq!(s.origin, "REDIS_URL");
    assert_eq!(
        s.urls()[0].expose(),
        "rediss://u:CANARY-pw@r.example:6380/2"
    );
    assert_eq!((s.username, s.password, s.tls), (None, None, false));
    let debug = format!("{:?}", s.target);
    assert!(!debug.contains("CANARY"), "{debug}");
    assert!(debug.contains("r.example:6380"), "{debug}");
}

#[test]
fn env_host_port_credentials_and_ssl_build_one_url() {
    let s = resolve(
        &Config::default(),
        &[
            ("REDIS_HOST", "cache.internal"),
            ("REDIS_PORT", "6380"),
            ("REDIS_USERNAME", "gateway"),
            ("REDIS_PASSWORD", "p@ss:CANARY/1"),
            ("REDIS_SSL", "True"),
        ],
    )
    .unwrap();
    assert_eq!(s.target, RedisTarget::Node(node("cache.internal", 6380)));
    assert!(s.tls);
    assert_eq!(s.origin, "REDIS_HOST");
    assert_eq!(
        s.urls()[0].expose(),
        "rediss://gateway:p%40ss%3ACANARY%2F1@cache.internal:6380"
    );
    let debug = format!("{s:?}");
    assert!(!debug.contains("CANARY"), "{debug}");
    let plain = resolve(&Config::default(), &[("REDIS_HOST", "h")]).unwrap();
    assert_eq!(plain.urls()[0].expose(), "redis://h:6379");
}

#[test]
fn env_cluster_nodes_are_a_json_list() {
    let s = resolve(
        &Config::default(),
        &[
            (
                "REDIS_CLUSTER_NODES",
                r#"[{"host": "10.0.0.1", "port": 7000}, {"host": "10.0.0.2", "port": "7001"}]"#,
            ),
            ("REDIS_PASSWORD", "pw"),
            ("REDIS_HOST", "loses-to-the-cluster"),
        ],
    )
    .unwrap();
    assert_eq!(
        s.target,
        RedisTarget::Cluster(vec![node("10.0.0.1", 7000), node("10.0.0.2", 7001)])
    );
    let urls: Vec<String> = s.urls().iter().map(|u| u.expose().to_string()).collect();
    assert_eq!(
        urls,
        ["redis://:pw@10.0.0.1:7000", "redis://:pw@10.0.0.2:7001"]
    );
    let e =
        redis_settings(&Config::default(), &env(&[("REDIS_CLUSTER_NODES", "nope")])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("REDIS_CLUSTER_NODES: invalid Redis node list"),
        "{e}"
    );
}

#[test]
fn env_sentinel_needs_a_service_name() {
    let nodes = r#"[["s1", 26379], {"host": "s2", "port": 26380}]"#;
    let s = resolve(
        &Config::default(),
        &[
            ("REDIS_SENTINEL_NODES", nodes),
            ("REDIS_SERVICE_NAME", "mymaster"),
        ],
    )
    .unwrap();
    assert_eq!(
        s.target,
        RedisTarget::Sentinel {
            nodes: vec![node("s1", 26379), node("s2", 26380)],
            service_name: "mymaster".into()
        }
    );
    let e =
        redis_settings(&Config::default(), &env(&[("REDIS_SENTINEL_NODES", nodes)])).unwrap_err();
    assert_eq!(
        e,
        RedisConfigError::NoServiceName {
            key: "REDIS_SENTINEL_NODES".into()
        }
    );
}

#[test]
fn router_settings_override_the_environment_key_by_key() {
    let c = yaml(
        "router_settings:\n  redis_host: router-redis\n  redis_port: 6390\n  redis_password: os.environ/RP\n",
    );
    let s = resolve(&c, &[("REDIS_HOST", "env-redis"), ("REDIS_USERNAME", "u")]).unwrap();
    assert_eq!(s.target, RedisTarget::Node(node("router-redis", 6390)));
    assert_eq!(s.origin, "router_settings.redis_host");
    // the username only the environment sets is kept
    assert_eq!(s.username.as_deref(), Some("u"));
    let c = yaml("router_settings:\n  redis_url: redis://router:1\n");
    let s = resolve(&c, &[("REDIS_HOST", "env-redis")]).unwrap();
    assert_eq!(s.urls()[0].expose(), "redis://router:1");
    assert_eq!(s.origin, "router_settings.redis_url");
}

#[test]
fn cache_params_of_type_redis_win_and_may_list_startup_nodes() {
    let c = yaml(
        "litellm_settings:\n  cache: true\n  cache_params:\n    type: redis\n    host: cache-host\n    port: \"6385\"\n    password: pw\n    ssl: true\nrouter_settings:\n  redis_host: router-redis\n",
    );
    let s = resolve(&c, &[]).unwrap();
    assert_eq!(s.target, RedisTarget::Node(node("cache-host", 6385)));
    assert_eq!(s.origin, "litellm_settings.cache_params.host");
    assert_eq!(s.urls()[0].expose(), "rediss://:pw@cache-host:6385");
    let c = yaml(
        "litellm_settings:\n  cache_params:\n    type: redis\n    redis_startup_nodes: [{host: n1, port: 7000}, {host: n2}]\n",
    );
    let s = resolve(&c, &[]).unwrap();
    assert_eq!(
        s.target,
        RedisTarget::Cluster(vec![node("n1", 7000), node("n2", DEFAULT_REDIS_PORT)])
    );
    assert_eq!(
        s.origin,
        "litellm_settings.cache_params.redis_startup_nodes"
    );
    let c = yaml("litellm_settings:\n  cache_params: {type: redis}\n");
    assert_eq!(
        redis_settings(&c, &env(&[])),
        Err(RedisConfigError::NoServer)
    );
    // the environment can supply the server cache_params asks for
    let s = resolve(&c, &[("REDIS_HOST", "h")]).unwrap();
    assert_eq!(s.target, RedisTarget::Node(node("h", 6379)));
}

#[test]
fn environment_variables_of_the_file_come_before_the_process() {
    let c = yaml("environment_variables:\n  REDIS_HOST: from-file\n");
    let s = resolve(&c, &[("REDIS_HOST", "from-process")]).unwrap();
    assert_eq!(s.target, RedisTarget::Node(node("from-file", 6379)));
}

#[test]
fn invalid_ports_name_their_key() {
    for bad in ["0", "70000", "six", "63.5"] {
        let e = redis_settings(
            &Config::default(),
            &env(&[("REDIS_HOST", "h"), ("REDIS_PORT", bad)]),
        )
        .unwrap_err();
        assert_eq!(
            e,
            RedisConfigError::Port {
                key: "REDIS_PORT".into(),
                value: bad.into()
            }
        );
    }
}

#[test]
fn files_with_these_keys_load_as_before() {
    let loaded = crate::load_str(
        "model_list: [{model_name: m, litellm_params: {model: openai/gpt-4o}}]\nrouter_settings:\n  redis_host: r\n  redis_port: 6379\n  redis_password: CANARY-pw\nlitellm_settings:\n  cache: true\n  cache_params: {type: redis, host: r, password: CANARY-pw}\n",
        "config.yaml",
        &|_| None,
    )
    .unwrap();
    // the Redis keys are acted on (the shared counters); the response cache is not
    let keys = loaded.config.unimplemented_keys();
    assert_eq!(keys, vec!["litellm_settings.cache".to_string()]);
    let s = redis_settings(&loaded.config, &|_| None).unwrap().unwrap();
    assert!(!format!("{s:?}").contains("CANARY"));
}
