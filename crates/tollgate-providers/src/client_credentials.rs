//! A deployment's per-request copy carrying a client's own credentials: its key, and the
//! base URL it chose, where the deployment allows them (`configurable_clientside_auth_params`,
//! [`crate::clientside`]; the host checked by [`crate::egress::check_base`]).

use crate::deployment::{
    Deployment, DeploymentError, anthropic_version, auth_header, auth_header_name, provider_base,
};
use crate::egress::CheckedBase;
use crate::table::WireDialect;

impl Deployment {
    /// A per-request copy called with a client's own credentials (where the deployment allows
    /// them: the caller checks [`Deployment::clientside`]):
    ///
    /// - `key` replaces the deployment's key in the provider's auth header;
    /// - `base`, a client-chosen base that passed [`crate::egress::check_base`], replaces the
    ///   base URL, and the copy connects only to its checked addresses. Then none of the
    ///   deployment's own headers go with it (its key, `organization`, `extra_headers`: they
    ///   were meant for its own upstream), only the client's key and, for Anthropic, the
    ///   default `anthropic-version`. LiteLLM clears the same fields when a client redirects
    ///   `api_base`.
    ///
    /// Errors: [`DeploymentError::InvalidHeader`] when the key cannot be a header value.
    pub fn with_client_credentials(
        &self,
        key: Option<&str>,
        base: Option<CheckedBase>,
    ) -> Result<Deployment, DeploymentError> {
        let auth = key
            .map(|k| auth_header(self.provider, k))
            .transpose()
            .map_err(|name| DeploymentError::InvalidHeader {
                id: self.id.clone(),
                name: name.to_string(),
            })?;
        let auth_name = auth_header_name(self.provider);
        let (base_url, headers) = match &base {
            Some(b) => {
                let mut headers: Vec<_> = auth.into_iter().collect();
                if self.provider.dialect == WireDialect::Anthropic {
                    headers.push(anthropic_version());
                }
                (provider_base(self.provider, b.url()), headers)
            }
            None => {
                let mut headers: Vec<_> = self
                    .headers
                    .iter()
                    .filter(|(n, _)| auth.is_none() || *n != auth_name)
                    .cloned()
                    .collect();
                headers.splice(0..0, auth);
                (self.base_url.clone(), headers)
            }
        };
        Ok(Deployment {
            id: self.id.clone(),
            id_header: self.id_header.clone(),
            model_group: self.model_group.clone(),
            provider: self.provider,
            upstream_model: self.upstream_model.clone(),
            base_url,
            headers,
            defaults: self.defaults.clone(),
            timeouts: self.timeouts,
            max_response_bytes: self.max_response_bytes,
            mock: self.mock.clone(),
            mode: self.mode.clone(),
            clientside: self.clientside.clone(),
            pinned: base,
            urls: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::{ANTHROPIC_VERSION, DeploymentSpec};

    fn spec(provider: &str) -> DeploymentSpec {
        DeploymentSpec {
            id: "d1".into(),
            model_group: "g".into(),
            provider: provider.into(),
            upstream_model: "m".into(),
            ..Default::default()
        }
    }

    /// A client's key replaces the deployment's; with a client-chosen base, none of the
    /// deployment's own headers go along.
    #[test]
    fn client_credentials_never_carry_the_deployment_s_secrets() {
        let mut s = spec("openai");
        s.api_key = Some("sk-deployment-secret".into());
        s.organization = Some("org-own".into());
        s.extra_headers = vec![("X-Internal-Token".into(), "internal-secret".into())];
        s.api_base = Some("http://127.0.0.1:9/v1".into());
        let d = Deployment::build(s, &|_| None).unwrap();
        let names = |d: &Deployment| -> Vec<(String, String)> {
            d.headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect()
        };
        let own_key = d.with_client_credentials(Some("sk-client"), None).unwrap();
        assert_eq!(own_key.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(
            names(&own_key),
            [
                ("authorization".into(), "Bearer sk-client".into()),
                ("openai-organization".into(), "org-own".into()),
                ("x-internal-token".into(), "internal-secret".into()),
            ]
        );
        assert!(own_key.headers[0].1.is_sensitive());
        assert!(own_key.pinned.is_none());
        let base = CheckedBase::unchecked_for_tests(
            "https://byok.example.com/v1/",
            vec!["93.184.216.34:443".parse().unwrap()],
        )
        .unwrap();
        let chosen = d
            .with_client_credentials(Some("sk-client"), Some(base))
            .unwrap();
        assert_eq!(chosen.base_url, "https://byok.example.com/v1");
        assert_eq!(
            names(&chosen),
            [("authorization".into(), "Bearer sk-client".into())]
        );
        assert_eq!(chosen.id, d.id);
        assert!(chosen.pinned.is_some());
        let dbg = format!("{chosen:?}");
        assert!(!dbg.contains("sk-client") && !dbg.contains("sk-deployment-secret"));
        // Anthropic: x-api-key and the default version only.
        let mut a = spec("anthropic");
        a.api_key = Some("sk-ant-own".into());
        let d = Deployment::build(a, &|_| None).unwrap();
        let base = CheckedBase::unchecked_for_tests(
            "https://claude.example.com/v1/messages",
            vec!["93.184.216.34:443".parse().unwrap()],
        )
        .unwrap();
        let chosen = d
            .with_client_credentials(Some("sk-ant-client"), Some(base))
            .unwrap();
        assert_eq!(chosen.base_url, "https://claude.example.com");
        assert_eq!(
            names(&chosen),
            [
                ("x-api-key".into(), "sk-ant-client".into()),
                ("anthropic-version".into(), ANTHROPIC_VERSION.into()),
            ]
        );
        assert_eq!(
            d.with_client_credentials(Some("bad\nkey"), None)
                .unwrap_err(),
            DeploymentError::InvalidHeader {
                id: "d1".into(),
                name: "x-api-key".into()
            }
        );
    }

    #[test]
    fn a_bad_clientside_list_is_named() {
        let mut s = spec("openai");
        s.clientside_auth_params = vec![serde_json::json!({"api_base": "(x"})];
        let e = Deployment::build(s, &|_| None).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "deployment 'd1': litellm_params.configurable_clientside_auth_params: entry 0: api_base pattern"
            ),
            "{e}"
        );
    }
}
