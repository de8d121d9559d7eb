//! The governed scenario's key set-up, against an in-process key endpoint.

mod support;

use std::path::Path;
use std::time::Duration;

use tollgate_bench::gateway::GatewayDef;
use tollgate_bench::harness::governed_headers;

const DEF: &str = r#"
name = "gov"
program = ["sh"]
health_url = "http://127.0.0.1:1/"
base_url = "http://127.0.0.1:1"
[headers]
authorization = "Bearer sk-bench-master"
[capabilities]
scenarios = ["forwarding", "governed"]
[governed]
path = "/key/generate"
body = '{"max_budget": 12.5}'
"#;

#[tokio::test]
async fn virtual_key_replaces_the_master_key() {
    let (url, _) = support::start(Duration::ZERO).await;
    let def = GatewayDef::parse(DEF, Path::new("gov.toml")).unwrap();
    let headers = vec![
        (
            "authorization".to_string(),
            "Bearer sk-bench-master".to_string(),
        ),
        ("x-extra".to_string(), "1".to_string()),
    ];
    let h = governed_headers(&def, &url, headers).await.unwrap();
    assert_eq!(
        h,
        vec![
            ("x-extra".to_string(), "1".to_string()),
            (
                "authorization".to_string(),
                "Bearer sk-virtual-1".to_string()
            ),
        ]
    );
}

#[tokio::test]
async fn refused_key_creation_is_an_error() {
    let (url, _) = support::start(Duration::ZERO).await;
    let def = GatewayDef::parse(DEF, Path::new("gov.toml")).unwrap();
    let headers = vec![("authorization".to_string(), "Bearer wrong".to_string())];
    let e = governed_headers(&def, &url, headers).await.unwrap_err();
    assert!(e.to_string().contains("HTTP 401"), "{e}");
}
