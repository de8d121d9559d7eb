//! The codec table: every (endpoint, upstream) pair against the codec it must pick.

use tollgate_providers::{Deployment, DeploymentSpec, WireDialect};
use tollgate_translate::codec::{Codec, RequestRule, Rewrite};

use super::{Plan, Upstream, plan, table};
use crate::request::Endpoint;

fn dep(provider: &str) -> Deployment {
    Deployment::build(
        DeploymentSpec {
            id: "d1".into(),
            model_group: "g".into(),
            provider: provider.into(),
            upstream_model: "m".into(),
            api_base: Some("http://127.0.0.1:1/v1".into()),
            api_key: Some("k".into()),
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap()
}

fn codec(p: Plan) -> &'static dyn Codec {
    match p {
        Plan::Call(c) => c,
        Plan::LocalTokenCount => panic!("expected a codec, got the local token count"),
    }
}

const ENDPOINTS: [Endpoint; 6] = [
    Endpoint::ChatCompletions,
    Endpoint::Completions,
    Endpoint::Embeddings,
    Endpoint::Messages,
    Endpoint::CountTokens,
    Endpoint::Responses,
];

/// Endpoint, upstream, the codec's name and upstream path (`None`: no codec).
type Row = (Endpoint, Upstream, Option<(&'static str, &'static str)>);

/// Every (endpoint, upstream) pair of the table against its expected row.
#[test]
fn every_pair_maps_to_its_codec() {
    use Endpoint as E;
    use Upstream as U;
    let expected: [Row; 18] = [
        (
            E::ChatCompletions,
            U::OpenAi,
            Some(("chat→openai", "/chat/completions")),
        ),
        (
            E::ChatCompletions,
            U::OpenAiCompatible,
            Some(("chat→openai", "/chat/completions")),
        ),
        (
            E::ChatCompletions,
            U::Anthropic,
            Some(("chat→anthropic", "/v1/messages")),
        ),
        (
            E::Completions,
            U::OpenAi,
            Some(("completions→openai", "/completions")),
        ),
        (
            E::Completions,
            U::OpenAiCompatible,
            Some(("completions→openai", "/completions")),
        ),
        (
            E::Completions,
            U::Anthropic,
            Some(("completions→anthropic", "/v1/messages")),
        ),
        (
            E::Embeddings,
            U::OpenAi,
            Some(("embeddings→openai", "/embeddings")),
        ),
        (
            E::Embeddings,
            U::OpenAiCompatible,
            Some(("embeddings→openai", "/embeddings")),
        ),
        (E::Embeddings, U::Anthropic, None),
        (
            E::Messages,
            U::OpenAi,
            Some(("messages→chat", "/chat/completions")),
        ),
        (
            E::Messages,
            U::OpenAiCompatible,
            Some(("messages→chat", "/chat/completions")),
        ),
        (
            E::Messages,
            U::Anthropic,
            Some(("messages→anthropic", "/v1/messages")),
        ),
        (E::CountTokens, U::OpenAi, None),
        (E::CountTokens, U::OpenAiCompatible, None),
        (
            E::CountTokens,
            U::Anthropic,
            Some(("count_tokens→anthropic", "/v1/messages/count_tokens")),
        ),
        (
            E::Responses,
            U::OpenAi,
            Some(("responses→openai", "/responses")),
        ),
        (
            E::Responses,
            U::OpenAiCompatible,
            Some(("responses→chat", "/chat/completions")),
        ),
        (
            E::Responses,
            U::Anthropic,
            Some(("responses→anthropic", "/v1/messages")),
        ),
    ];
    for (endpoint, upstream, want) in expected {
        let got = table(endpoint, upstream);
        match (want, got) {
            (Some((name, path)), Some(Plan::Call(c))) => {
                assert_eq!(
                    (c.name(), c.upstream_path()),
                    (name, path),
                    "{endpoint:?} {upstream:?}"
                );
            }
            (None, Some(Plan::LocalTokenCount)) => assert_eq!(endpoint, E::CountTokens),
            (None, None) => assert_eq!((endpoint, upstream), (E::Embeddings, U::Anthropic)),
            (want, got) => panic!("{endpoint:?} {upstream:?}: want {want:?}, got {got:?}"),
        }
    }
}

/// Same-dialect pass-throughs forward the raw body (OpenAI ones force stream usage on,
/// Messages keeps Anthropic's `metadata`); every other pair translates.
#[test]
fn passthroughs_forward_and_other_pairs_translate() {
    let forward = |e, u| match codec(table(e, u).unwrap()).request() {
        RequestRule::Forward(r) => Some(r),
        RequestRule::Translate(_) => None,
    };
    let openai = Rewrite {
        force_stream_usage: true,
        anthropic_metadata: false,
    };
    let plain = Rewrite {
        force_stream_usage: false,
        anthropic_metadata: false,
    };
    for e in [
        Endpoint::ChatCompletions,
        Endpoint::Completions,
        Endpoint::Embeddings,
    ] {
        assert_eq!(forward(e, Upstream::OpenAi), Some(openai));
        assert_eq!(forward(e, Upstream::OpenAiCompatible), Some(openai));
    }
    assert_eq!(
        forward(Endpoint::Messages, Upstream::Anthropic),
        Some(Rewrite {
            force_stream_usage: false,
            anthropic_metadata: true,
        })
    );
    assert_eq!(
        forward(Endpoint::CountTokens, Upstream::Anthropic),
        Some(plain)
    );
    assert_eq!(forward(Endpoint::Responses, Upstream::OpenAi), Some(plain));
    for (e, u) in [
        (Endpoint::ChatCompletions, Upstream::Anthropic),
        (Endpoint::Completions, Upstream::Anthropic),
        (Endpoint::Messages, Upstream::OpenAi),
        (Endpoint::Messages, Upstream::OpenAiCompatible),
        (Endpoint::Responses, Upstream::OpenAiCompatible),
        (Endpoint::Responses, Upstream::Anthropic),
    ] {
        assert_eq!(forward(e, u), None, "{e:?} {u:?}");
    }
}

/// Only OpenAI itself serves `/responses`: other OpenAI-dialect servers and the request's
/// own `mock_response` get the Chat Completions translation.
#[test]
fn upstream_kind_follows_dialect_and_provider() {
    let (openai, vllm, anthropic) = (dep("openai"), dep("hosted_vllm"), dep("anthropic"));
    assert_eq!(Upstream::of(&openai, WireDialect::OpenAi), Upstream::OpenAi);
    assert_eq!(
        Upstream::of(&openai, WireDialect::InProcessMock),
        Upstream::OpenAiCompatible
    );
    assert_eq!(
        Upstream::of(&vllm, WireDialect::OpenAi),
        Upstream::OpenAiCompatible
    );
    assert_eq!(
        Upstream::of(&anthropic, WireDialect::Anthropic),
        Upstream::Anthropic
    );
    let name = |d: &Deployment, w, e| codec(plan(e, d, w).unwrap()).name();
    assert_eq!(
        name(&openai, WireDialect::OpenAi, Endpoint::Responses),
        "responses→openai"
    );
    assert_eq!(
        name(&vllm, WireDialect::OpenAi, Endpoint::Responses),
        "responses→chat"
    );
    assert_eq!(
        name(&openai, WireDialect::InProcessMock, Endpoint::Responses),
        "responses→chat"
    );
    assert!(matches!(
        plan(Endpoint::CountTokens, &vllm, WireDialect::OpenAi),
        Ok(Plan::LocalTokenCount)
    ));
}

/// Embeddings on an Anthropic deployment: the 400 the gateway has always given, naming the
/// model group and the provider, with `param: model`; every other endpoint plans.
#[test]
fn unsupported_pair_is_the_same_400() {
    let anthropic = dep("anthropic");
    let e = plan(Endpoint::Embeddings, &anthropic, WireDialect::Anthropic).unwrap_err();
    assert_eq!(e.status, 400);
    assert_eq!(e.kind, "invalid_request_error");
    assert_eq!(
        e.message,
        "Model group 'g' does not serve embeddings (provider 'anthropic')."
    );
    assert_eq!(e.param.as_deref(), Some("model"));
    for endpoint in ENDPOINTS {
        if endpoint != Endpoint::Embeddings {
            assert!(plan(endpoint, &anthropic, WireDialect::Anthropic).is_ok());
        }
        assert!(plan(endpoint, &anthropic, WireDialect::InProcessMock).is_ok());
    }
}
