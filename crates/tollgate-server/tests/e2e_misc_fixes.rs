//! End-to-end, through the real `tollgate` binary in front of `tollgate-mock`: small fixes a
//! newcomer's black-box trial found.
//!
//! - client-chosen bases: a plain `api_base` entry and an `allow_http: true` pattern of
//!   `configurable_clientside_auth_params` combine, in either order (`misc_fixes/clientside.rs`);
//! - image data that is not base64 is a 400 naming the field, in both directions
//!   (`misc_fixes/images.rs`);
//! - `check-config`: the cooldown rule that applies, the governance settings in effect, group
//!   counts that agree with the server's, every problem deployment at once; skipped tests named
//!   (`misc_fixes/check_config.rs`);
//! - stored Responses belong to their creator (`misc_fixes/responses.rs`);
//! - `/v1/models` lists the wildcard groups a key may call (`misc_fixes/models.rs`).

#[path = "common/governance.rs"]
mod gov;

#[path = "misc_fixes/check_config.rs"]
mod check_config;
#[path = "misc_fixes/clientside.rs"]
mod clientside;
#[path = "misc_fixes/images.rs"]
mod images;
#[path = "misc_fixes/models.rs"]
mod models;
#[path = "misc_fixes/responses.rs"]
mod responses;

use gov::{MASTER, UPSTREAM_KEY};

/// The gateway of these tests, onto the mock at `mock`. Each deployment is `/d/<name>` on the
/// mock, so its calls are told apart by `Observation::deployment`:
///
/// - `byok-a` / `byok-b`: `configurable_clientside_auth_params` with `api_key`, a plain
///   `api_base` and an `allow_http: true` pattern for `http://10.9.…`, in the two orders;
/// - `claude`: Anthropic (Messages upstream), `gpt`: an OpenAI-dialect model whose Responses are
///   translated (chat upstream), `oa-resp`: `openai/`, whose Responses are passed through;
/// - `bedrock/*`: a wildcard group.
pub fn config(mock: &str) -> String {
    format!(
        r#"
model_list:
  - model_name: byok-a
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/byok-a/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params:
        - api_key
        - api_base
        - api_base: "^http://10\\.9\\."
          allow_http: true
  - model_name: byok-b
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/byok-b/v1
      api_key: {UPSTREAM_KEY}
      configurable_clientside_auth_params:
        - api_key
        - api_base: "^http://10\\.9\\."
          allow_http: true
        - api_base
  - model_name: claude
    litellm_params:
      model: anthropic/claude-mock
      api_base: {mock}/d/claude
      api_key: {UPSTREAM_KEY}
  - model_name: gpt
    litellm_params:
      model: hosted_vllm/mock-gpt
      api_base: {mock}/d/gpt/v1
      api_key: {UPSTREAM_KEY}
  - model_name: oa-resp
    litellm_params:
      model: openai/mock-gpt
      api_base: {mock}/d/oa/v1
      api_key: {UPSTREAM_KEY}
  - model_name: "bedrock/*"
    litellm_params:
      model: openai/*
      api_base: {mock}/d/bedrock/v1
      api_key: {UPSTREAM_KEY}
router_settings:
  num_retries: 0
  disable_cooldowns: true
general_settings:
  master_key: {MASTER}
"#
    )
}

/// A skip names the test as `cargo test` does, after its target (what `scripts/test.sh`
/// lists), whatever label the caller passes.
#[test]
fn a_skip_names_the_running_test() {
    assert_eq!(
        gov::skip::test_name("a label"),
        "e2e_misc_fixes::a_skip_names_the_running_test"
    );
    let off_thread = std::thread::spawn(|| gov::skip::test_name("a label"))
        .join()
        .unwrap();
    assert_eq!(off_thread, "e2e_misc_fixes: a label");
}
