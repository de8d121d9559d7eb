//! `include:` files, as LiteLLM reads them.

use std::path::{Path, PathBuf};

use tollgate_config::{ErrorKind, load_path};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn included_model_list_is_appended_and_settings_override() {
    let l = load_path(&data("include_root.yaml"), &|k| {
        (k == "ANTHROPIC_API_KEY").then(|| "sk-ant-test-000000000".to_string())
    })
    .unwrap();
    let c = &l.config;
    assert_eq!(
        c.model_groups(),
        vec!["root-model", "included-a", "included-b"]
    );
    assert_eq!(
        c.model_list[1]
            .litellm_params
            .api_key
            .as_ref()
            .unwrap()
            .expose(),
        "sk-ant-test-000000000"
    );
    // litellm_settings is a mapping: the included file's value replaces the root's.
    assert_eq!(c.litellm_settings.num_retries, Some(4));
    assert_eq!(c.litellm_settings.drop_params, None);
    assert!(!c.unimplemented_keys().contains(&"include".to_string()));
}

#[test]
fn errors_in_included_files_name_that_file_and_line() {
    let e = load_path(&data("include_bad_root.yaml"), &|_| None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Type);
    let want_file = data("include/bad_models.yaml").display().to_string();
    assert_eq!(e.source_name, want_file);
    assert_eq!((e.line, e.column), (Some(8), Some(12)));
    // The key path is the merged one (root entry first).
    assert_eq!(
        e.path.as_ref().unwrap().to_string(),
        "model_list[2].litellm_params.rpm"
    );
}
