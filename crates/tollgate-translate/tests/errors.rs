//! Every upstream error fixture, reshaped for a client of the other dialect (wire-formats.md
//! §7.6), compared with a golden file.
#![expect(
    clippy::unwrap_used,
    reason = "test support: a failed setup fails the test"
)]

mod common;

use common::*;
use serde_json::{Value, json};
use tollgate_protocol::Dialect;
use tollgate_translate::errors::map_upstream_error;

fn status_of(file: &str) -> u16 {
    file[..3].parse().unwrap()
}

#[test]
fn upstream_errors_in_the_other_dialect() {
    let mut golden = serde_json::Map::new();
    for (dir, client) in [
        ("anthropic/errors", Dialect::OpenAi),
        ("openai/errors", Dialect::Anthropic),
    ] {
        let mut files: Vec<String> = std::fs::read_dir(shared_dir().join("fixtures").join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        for file in files {
            let body = fixture_bytes(&format!("{dir}/{file}"));
            let env = map_upstream_error(status_of(&file), &body, client);
            let out: Value = serde_json::from_slice(&env.to_json(client)).unwrap();
            // The upstream's message always survives.
            let upstream: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                out["error"]["message"], upstream["error"]["message"],
                "{dir}/{file}"
            );
            golden.insert(
                format!("{dir}/{file}"),
                json!({"status": env.status, "body": out}),
            );
        }
    }
    let golden = Value::Object(golden);
    check_json("errors/upstream_errors.json", &golden);
    assert_eq!(
        golden["anthropic/errors/529_overloaded.json"]["status"],
        503
    );
    assert_eq!(golden["openai/errors/503_overloaded.json"]["status"], 529);
    assert_eq!(
        golden["openai/errors/503_overloaded.json"]["body"]["error"]["type"],
        "overloaded_error"
    );
    assert_eq!(
        golden["openai/errors/404_model_not_found.json"]["body"]["error"]["type"],
        "not_found_error"
    );
    assert_eq!(
        golden["openai/errors/401_invalid_api_key.json"]["body"]["error"]["type"],
        "authentication_error"
    );
}
