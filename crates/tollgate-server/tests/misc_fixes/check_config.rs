//! `tollgate check-config` prints what actually applies: the default cooldown rule when
//! `allowed_fails` is unset, the governance settings in effect (secrets masked), and a group
//! count the server's start line agrees with; a config with an unknown provider prefix is
//! refused with every problem deployment at once, each with `file:line`.
#![expect(
    clippy::expect_used,
    reason = "test support: a failed setup fails the test"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::gov::*;

/// `tollgate` with nothing of this machine's environment deciding the config or the store.
fn tollgate() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    for var in [
        "LITELLM_MASTER_KEY",
        "CONFIG_FILE_PATH",
        "DATABASE_URL",
        "TOLLGATE_DB_PATH",
    ] {
        c.env_remove(var);
    }
    c
}

fn write_config(dir: &TempDir, text: &str) -> PathBuf {
    let p = dir.0.join("config.yaml");
    std::fs::write(&p, text).expect("write config");
    p
}

fn check_config(path: &Path) -> Output {
    tollgate()
        .arg("check-config")
        .arg(path)
        .output()
        .expect("run tollgate check-config")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const GOVERNED: &str = "\
model_list:
  - model_name: gpt
    litellm_params:
      model: openai/mock-gpt
      api_base: http://127.0.0.1:9/v1
  - model_name: \"bedrock/*\"
    litellm_params:
      model: \"openai/*\"
      api_base: http://127.0.0.1:9/v1
  - model_name: \"byok/*\"
    litellm_params:
      model: \"openai/*\"
      api_base: http://127.0.0.1:9/v1
litellm_settings:
  max_end_user_budget: 2.5
  max_end_user_budget_id: tier-free
general_settings:
  master_key: sk-misc-master-CANARY8
  disable_spend_logs: true
";

#[test]
fn check_config_prints_the_rules_and_settings_that_apply() {
    let dir = TempDir::new("misc-check");
    let path = write_config(&dir, GOVERNED);
    let out = check_config(&path);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for want in [
        "Model groups: 3 (3 deployments; 2 of the groups are wildcard groups, counted once each: bedrock/*, byok/*)\n",
        // No allowed_fails: the rule that applies, not a count.
        "\n  allowed_fails: not set: LiteLLM's default rule applies: in a group of several deployments a 429, 401/403 or 404 cools the deployment at once, and timeouts, connection errors and 5xx once more than 50 % of its calls in the minute failed (from 5 calls on); a group's only deployment is never cooled down (default)\n",
        "\nGovernance in effect (master key set: virtual keys, budgets, limits and spend are enforced):\n",
        "\n  max_end_user_budget: 2.5 USD for each end user without its own budget tier (litellm_settings)\n",
        "\n  max_end_user_budget_id: tier-free: the limits of budget tier `tier-free` (created with /budget/new) apply to each end user without its own tier (litellm_settings)\n",
        "\n  spend_logs: off: spend is tracked, no LiteLLM_SpendLogs rows are written (general_settings.disable_spend_logs)\n",
        "\n  budget_exceeded_status_code: 422 (default)\n",
    ] {
        assert!(stdout.contains(want), "want {want:?} in:\n{stdout}");
    }
    assert!(
        stdout.contains("\n  master_key: ") && !stdout.contains("CANARY8"),
        "the master key is shown masked: {stdout}"
    );

    // Governance off: said so, and the governance settings present are named as ignored.
    let path = write_config(
        &dir,
        &GOVERNED.replace("  master_key: sk-misc-master-CANARY8\n", ""),
    );
    let out = check_config(&path);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("\nGovernance: off (no master key: no virtual keys, budgets, limits or spend logs; set general_settings.master_key or LITELLM_MASTER_KEY to turn it on)\n  ignored without a master key: litellm_settings.max_end_user_budget, litellm_settings.max_end_user_budget_id, general_settings.disable_spend_logs\n"),
        "{stdout}"
    );
}

/// The server's start line counts the groups as check-config does, and says how many are
/// wildcard groups.
#[test]
fn the_server_counts_the_groups_check_config_counts() {
    let gw = GovGateway::start(GOVERNED);
    let log = gw.log();
    let line = log
        .lines()
        .find(|l| l.contains("listening on http://"))
        .unwrap_or_default();
    assert!(
        line.contains(" groups=3 wildcard_groups=2 aliases=0 "),
        "{line}"
    );
}

#[test]
fn an_unknown_prefix_is_reported_with_every_unserved_deployment() {
    let dir = TempDir::new("misc-check");
    let path = write_config(
        &dir,
        "\
model_list:
  - model_name: gpt-4o
    litellm_params:
      model: opnai/gpt-4o
  - model_name: served
    litellm_params:
      model: openai/gpt-4o-mini
  - model_name: claude
    litellm_params:
      model: bedrock/anthropic.claude-3
  - model_name: typo2
    litellm_params:
      model: antropic/claude-3-5-haiku
",
    );
    let file = path.display().to_string();
    let out = check_config(&path);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "a heading and one line per deployment:\n{stderr}"
    );
    assert!(
        lines[0].starts_with(
            "error: invalid config: 3 deployments name a provider Tollgate does not serve yet (served: openai, "
        ),
        "{stderr}"
    );
    assert_eq!(
        lines[1..],
        [
            format!(
                "  {file}:4:14: model_list[0].litellm_params.model: unknown provider prefix 'opnai' in model 'opnai/gpt-4o' (model group 'gpt-4o'): did you mean 'openai'?"
            ),
            format!(
                "  {file}:10:14: model_list[2].litellm_params.model: provider 'bedrock' (model 'bedrock/anthropic.claude-3', model group 'claude') is not served by Tollgate yet"
            ),
            format!(
                "  {file}:13:14: model_list[3].litellm_params.model: unknown provider prefix 'antropic' in model 'antropic/claude-3-5-haiku' (model group 'typo2'): did you mean 'anthropic'?"
            ),
        ]
    );
    assert!(out.stdout.is_empty(), "no config OK: {}", text(&out.stdout));
}
