//! Scenario tests of the admission engine: exact values, bounded concurrency.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::*;
use crate::duration::{BudgetDuration, Clock, ManualClock};
use crate::pricing::{ModelPrice, Usage};
use crate::test_support::Ready;

pub(super) fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-14T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub(super) fn engine() -> (Admission, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(t0()));
    let store = Arc::new(InMemoryCounterStore::default());
    (
        Admission::with_clock(store, clock.clone(), AdmissionConfig::default()),
        clock,
    )
}

pub(super) fn budget(max: f64) -> Limits {
    Limits {
        max_budget: Some(max),
        ..Limits::default()
    }
}

pub(super) fn key_scope(limits: Limits) -> ScopeRequest {
    ScopeRequest::new(ScopeKey::key("hash-a"), limits).with_display("alias-a (sk-...abcd)")
}

/// An estimate of exactly `usd` (1 prompt token priced at `usd`, max_tokens 0).
pub(super) fn est(usd: f64) -> Estimate {
    Estimate {
        prompt_tokens: 1,
        output_tokens: 0,
        cost_usd: usd,
    }
}

pub(super) fn req(id: &str, scopes: Vec<ScopeRequest>, estimate: Estimate) -> AdmitRequest {
    AdmitRequest {
        request_id: id.into(),
        attempt: 0,
        scopes,
        estimate,
    }
}

#[test]
fn estimate_uses_max_tokens_or_the_default_bound() {
    let cfg = AdmissionConfig::default();
    let price = ModelPrice {
        input_per_token: 1e-6,
        output_per_token: 2e-6,
        max_output_tokens: Some(1000),
        ..ModelPrice::default()
    };
    let e = Estimate::new(&cfg, Some(&price), 500, Some(100));
    assert_eq!(
        (e.prompt_tokens, e.output_tokens, e.tokens()),
        (500, 100, 600)
    );
    assert!((e.cost_usd - 0.0007).abs() < 1e-15);
    // no max_tokens: default 4096 capped by the model's 1000
    let e = Estimate::new(&cfg, Some(&price), 500, None);
    assert_eq!(e.output_tokens, 1000);
    assert!((e.cost_usd - 0.0025).abs() < 1e-15);
    let e = Estimate::new(&cfg, None, 500, None);
    assert_eq!((e.output_tokens, e.cost_usd), (4096, 0.0));
}

/// One rule for every scope — `spend >= max_budget` refuses; just below admits; 0 blocks.
#[test]
fn every_scope_refuses_at_exactly_the_cap() {
    let kinds = [
        ScopeKind::Key,
        ScopeKind::User,
        ScopeKind::Team,
        ScopeKind::TeamMember,
        ScopeKind::EndUser,
        ScopeKind::Organization,
        ScopeKind::Tag,
        ScopeKind::ModelPerKey,
        ScopeKind::Global,
    ];
    for kind in kinds {
        let (adm, _) = engine();
        let scope = ScopeKey::new(kind, "s1");
        let sr = || vec![ScopeRequest::new(scope.clone(), budget(10.0))];
        adm.set_spend(&scope, 10.0 - 1e-9, None).ready().unwrap();
        let r = adm.admit(req("a", sr(), est(0.0))).ready();
        assert!(r.is_ok(), "{kind:?} refused below the cap");
        drop(r);
        adm.set_spend(&scope, 10.0, None).ready().unwrap();
        let rej = adm.admit(req("b", sr(), est(0.0))).ready().unwrap_err();
        assert_eq!(rej.error_type, "budget_exceeded", "{kind:?}");
        assert_eq!(
            rej.reason,
            RejectReason::Budget {
                current_cost: 10.0,
                max_budget: 10.0
            }
        );
        let want_status = if kind == ScopeKind::ModelPerKey {
            429
        } else {
            422
        };
        assert_eq!(rej.status, want_status, "{kind:?}");
        // max_budget 0 blocks the first request
        let zero = ScopeKey::new(kind, "zero");
        let rej = adm
            .admit(req(
                "c",
                vec![ScopeRequest::new(zero, budget(0.0))],
                est(0.0),
            ))
            .ready()
            .unwrap_err();
        assert_eq!(
            rej.reason,
            RejectReason::Budget {
                current_cost: 0.0,
                max_budget: 0.0
            }
        );
    }
}

#[test]
fn budget_message_and_configurable_status() {
    let clock = Arc::new(ManualClock::new(t0()));
    let cfg = AdmissionConfig {
        budget_exceeded_status: 429,
        ..AdmissionConfig::default()
    };
    let adm = Admission::with_clock(Arc::new(InMemoryCounterStore::default()), clock, cfg);
    adm.set_spend(&ScopeKey::key("hash-a"), 0.0612, None)
        .ready()
        .unwrap();
    let rej = adm
        .admit(req("r", vec![key_scope(budget(0.06))], est(0.001)))
        .ready()
        .unwrap_err();
    assert_eq!(rej.status, 429);
    assert_eq!(
        rej.message,
        "Budget has been exceeded! Key=alias-a (sk-...abcd) Current cost: 0.0612, Max budget: 0.06"
    );
    assert_eq!(rej.to_string(), rej.message);
    assert!(rej.headers.is_empty() && rej.retry_after_s.is_none());
    let team = ScopeRequest::new(ScopeKey::new(ScopeKind::Team, "team-a"), budget(1.0));
    adm.set_spend(&team.key, 1.5, None).ready().unwrap();
    let rej = adm
        .admit(req("r2", vec![team], est(0.0)))
        .ready()
        .unwrap_err();
    assert_eq!(
        rej.message,
        "Budget has been exceeded! Team=team-a Current cost: 1.5, Max budget: 1"
    );
    // the proxy-wide budget names no entity (LiteLLM's `BudgetExceededError` message)
    let global = ScopeRequest::new(ScopeKey::global(), budget(2.0));
    adm.set_spend(&global.key, 2.25, None).ready().unwrap();
    let rej = adm
        .admit(req("r3", vec![global], est(0.0)))
        .ready()
        .unwrap_err();
    assert_eq!(
        rej.message,
        "Budget has been exceeded! Current cost: 2.25, Max budget: 2"
    );
}

/// A key with no own max_budget but a tier with 30: the tier's cap applies.
#[test]
fn tier_budget_applies_to_key_without_own_budget() {
    let (adm, _) = engine();
    let tier = Limits {
        max_budget: Some(30.0),
        budget_duration: Some(BudgetDuration::Days(1)),
        ..Limits::default()
    };
    let eff = Limits::default().tighter(&tier);
    adm.set_spend(&ScopeKey::key("hash-a"), 99.10, None)
        .ready()
        .unwrap();
    let rej = adm
        .admit(req("r", vec![key_scope(eff)], est(0.01)))
        .ready()
        .unwrap_err();
    assert_eq!(
        rej.reason,
        RejectReason::Budget {
            current_cost: 99.1,
            max_budget: 30.0
        }
    );
}

#[test]
fn all_or_nothing_across_scopes() {
    let (adm, _) = engine();
    let team = ScopeKey::new(ScopeKind::Team, "t");
    adm.set_spend(&team, 5.0, None).ready().unwrap();
    let scopes = vec![
        key_scope(Limits {
            max_budget: Some(100.0),
            rpm_limit: Some(10),
            max_parallel_requests: Some(5),
            ..Limits::default()
        }),
        ScopeRequest::new(team.clone(), budget(5.0)),
    ];
    let rej = adm.admit(req("r", scopes, est(1.0))).ready().unwrap_err();
    assert_eq!(rej.scope, Some(team));
    // the key scope got nothing reserved and no request counted
    let k = adm
        .spend(&ScopeKey::key("hash-a"))
        .ready()
        .unwrap()
        .unwrap();
    assert_eq!((k.spend, k.reserved, k.in_flight), (0.0, 0.0, 0));
    let ok = adm
        .admit(req(
            "r2",
            vec![key_scope(Limits {
                rpm_limit: Some(1),
                ..Limits::default()
            })],
            est(0.0),
        ))
        .ready()
        .unwrap();
    assert_eq!(
        ok.rate_limits()[0].remaining_requests,
        Some(0),
        "refused request was counted in RPM"
    );
}

/// Budgets are checked on every scope before any rate limit.
#[test]
fn budgets_are_checked_before_rate_limits() {
    let (adm, _) = engine();
    let team = ScopeKey::new(ScopeKind::Team, "t");
    adm.set_spend(&team, 1.0, None).ready().unwrap();
    let k = key_scope(Limits {
        max_parallel_requests: Some(0),
        ..Limits::default()
    });
    let rej = adm
        .admit(req(
            "r",
            vec![k, ScopeRequest::new(team, budget(1.0))],
            est(0.0),
        ))
        .ready()
        .unwrap_err();
    assert_eq!(rej.error_type, "budget_exceeded");
}

#[test]
fn settle_is_exactly_once_and_replaces_the_reservation() {
    let (adm, _) = engine();
    let key = ScopeKey::key("hash-a");
    let mut r = adm
        .admit(req("r1", vec![key_scope(budget(1.0))], est(0.25)))
        .ready()
        .unwrap();
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!((s.spend, s.reserved, s.in_flight), (0.0, 0.25, 1));
    let done = r.settle(&Usage::new(1000, 500), 0.002).unwrap();
    assert_eq!(done.cost_usd, 0.002);
    assert_eq!(done.spend_of(ScopeKind::Key), Some(0.002));
    assert_eq!(
        r.settle(&Usage::new(1000, 500), 0.002),
        Err(SettleError::AlreadySettled)
    );
    drop(r);
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!((s.spend, s.reserved, s.in_flight), (0.002, 0.0, 0));
    // the same (request id, attempt) cannot be admitted twice while in flight; another attempt can
    let _a = adm
        .admit(req("r2", vec![key_scope(budget(1.0))], est(0.0)))
        .ready()
        .unwrap();
    let dup = adm
        .admit(req("r2", vec![key_scope(budget(1.0))], est(0.0)))
        .ready()
        .unwrap_err();
    assert_eq!(dup.reason, RejectReason::DuplicateAttempt);
    let mut retry = req("r2", vec![key_scope(budget(1.0))], est(0.0));
    retry.attempt = 1;
    assert!(adm.admit(retry).ready().is_ok());
}

/// A client hang-up: the server settles the usage produced so far; a reservation dropped
/// without settlement charges nothing and frees its slot.
#[test]
fn partial_usage_and_drop_guard() {
    let (adm, _) = engine();
    let key = ScopeKey::key("hash-a");
    let limits = Limits {
        max_parallel_requests: Some(1),
        ..Limits::default()
    };
    {
        let mut r = adm
            .admit(req("a", vec![key_scope(limits.clone())], est(0.5)))
            .ready()
            .unwrap();
        let busy = adm
            .admit(req("b", vec![key_scope(limits.clone())], est(0.5)))
            .ready()
            .unwrap_err();
        assert_eq!(busy.reason, RejectReason::Parallel { limit: 1 });
        assert_eq!(busy.status, 429);
        assert_eq!(busy.retry_after_s, Some(1));
        r.settle(&Usage::new(100, 7), 0.0001).unwrap();
    }
    {
        let _r = adm
            .admit(req("c", vec![key_scope(limits.clone())], est(0.5)))
            .ready()
            .unwrap();
        // dropped here: nothing charged
    }
    let r = adm
        .admit(req("d", vec![key_scope(limits)], est(0.5)))
        .ready()
        .unwrap();
    assert!(r.release());
    let s = adm.spend(&key).ready().unwrap().unwrap();
    assert_eq!((s.spend, s.reserved, s.in_flight), (0.0001, 0.0, 0));
}

#[test]
fn rpm_fixed_window_started_by_first_request() {
    let (adm, clock) = engine();
    clock.advance_ms(12_345); // the window is not aligned to clock minutes
    let limits = Limits {
        rpm_limit: Some(2),
        ..Limits::default()
    };
    let a = adm
        .admit(req("a", vec![key_scope(limits.clone())], est(0.0)))
        .ready()
        .unwrap();
    let h = a.rate_limit_headers();
    assert!(h.contains(&("x-ratelimit-api_key-limit-requests".into(), "2".into())));
    assert!(h.contains(&("x-ratelimit-api_key-remaining-requests".into(), "1".into())));
    assert!(h.contains(&("x-ratelimit-remaining-requests".into(), "1".into())));
    let b = adm
        .admit(req("b", vec![key_scope(limits.clone())], est(0.0)))
        .ready()
        .unwrap();
    assert_eq!(b.rate_limits()[0].remaining_requests, Some(0));
    drop((a, b)); // settling does not give requests back
    clock.advance_ms(20_000);
    let rej = adm
        .admit(req("c", vec![key_scope(limits.clone())], est(0.0)))
        .ready()
        .unwrap_err();
    assert_eq!(rej.status, 429);
    assert_eq!(rej.error_type, "rate_limit_error");
    assert_eq!(rej.retry_after_s, Some(40));
    assert!(rej.headers.contains(&("retry-after".into(), "40".into())));
    assert!(
        rej.headers
            .contains(&("x-ratelimit-api_key-remaining-requests".into(), "0".into()))
    );
    assert_eq!(
        rej.message,
        "Rate limit exceeded for api_key: hash-a. Limit type: requests. Current limit: 2, Remaining: 0. Limit resets at: 2026-03-14 10:01:12 UTC"
    );
    clock.advance_ms(40_000); // window [10:00:12.345, 10:01:12.345) is over
    let d = adm
        .admit(req("d", vec![key_scope(limits)], est(0.0)))
        .ready()
        .unwrap();
    assert_eq!(d.rate_limits()[0].remaining_requests, Some(1));
    assert_eq!(d.rate_limits()[0].window_reset_ms, clock.now_ms() + 60_000);
}

/// TPM counts tokens, not requests; usage corrected at settlement.
#[test]
fn tpm_counts_actual_tokens() {
    let (adm, clock) = engine();
    let limits = Limits {
        tpm_limit: Some(30),
        ..Limits::default()
    };
    let e = Estimate {
        prompt_tokens: 8,
        output_tokens: 4096,
        cost_usd: 0.0,
    };
    let mut a = adm
        .admit(req("a", vec![key_scope(limits.clone())], e))
        .ready()
        .unwrap();
    assert_eq!(a.rate_limits()[0].remaining_tokens, Some(0)); // 30 − (8 + 4096), floored at 0
    a.settle(&Usage::new(100, 50), 0.0).unwrap();
    let rej = adm
        .admit(req("b", vec![key_scope(limits.clone())], e))
        .ready()
        .unwrap_err();
    assert_eq!(
        rej.reason,
        RejectReason::Tokens {
            limit: 30,
            used: 150
        }
    );
    assert!(
        rej.headers
            .contains(&("x-ratelimit-api_key-remaining-tokens".into(), "0".into()))
    );
    assert!(
        rej.message
            .contains("Limit type: tokens. Current limit: 30")
    );
    clock.advance_ms(60_000);
    assert!(
        adm.admit(req("c", vec![key_scope(limits)], e))
            .ready()
            .is_ok()
    );

    // a prompt that alone exceeds the remaining tokens is refused
    let big = Limits {
        tpm_limit: Some(1000),
        ..Limits::default()
    };
    let scope = || vec![ScopeRequest::new(ScopeKey::key("other"), big.clone())];
    let mut first = adm
        .admit(req(
            "d",
            scope(),
            Estimate {
                prompt_tokens: 100,
                output_tokens: 100,
                cost_usd: 0.0,
            },
        ))
        .ready()
        .unwrap();
    assert_eq!(first.rate_limits()[0].remaining_tokens, Some(800));
    first.settle(&Usage::new(100, 300), 0.0).unwrap(); // 400 used
    let ok = adm
        .admit(req(
            "e",
            scope(),
            Estimate {
                prompt_tokens: 600,
                output_tokens: 0,
                cost_usd: 0.0,
            },
        ))
        .ready()
        .unwrap();
    assert_eq!(ok.rate_limits()[0].remaining_tokens, Some(0));
    drop(ok); // released: 400 used again
    let rej = adm
        .admit(req(
            "f",
            scope(),
            Estimate {
                prompt_tokens: 601,
                output_tokens: 0,
                cost_usd: 0.0,
            },
        ))
        .ready()
        .unwrap_err();
    assert_eq!(
        rej.reason,
        RejectReason::Tokens {
            limit: 1000,
            used: 400
        }
    );
}

#[test]
fn per_model_headers_and_legacy_minimum() {
    let (adm, _) = engine();
    let scopes = vec![
        key_scope(Limits {
            rpm_limit: Some(100),
            tpm_limit: Some(10_000),
            ..Limits::default()
        }),
        ScopeRequest::new(
            ScopeKey::model_per_key("hash-a", "openai/gpt-4o:eu"),
            Limits {
                rpm_limit: Some(3),
                ..Limits::default()
            },
        ),
    ];
    let r = adm
        .admit(req(
            "a",
            scopes,
            Estimate {
                prompt_tokens: 10,
                output_tokens: 90,
                cost_usd: 0.0,
            },
        ))
        .ready()
        .unwrap();
    let h = r.rate_limit_headers();
    let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    assert_eq!(get("x-ratelimit-api_key-remaining-requests"), Some("99"));
    assert_eq!(get("x-ratelimit-api_key-remaining-tokens"), Some("9900"));
    assert_eq!(
        get("x-ratelimit-model_per_key-remaining-requests"),
        Some("2")
    );
    assert_eq!(
        get("x-litellm-key-remaining-requests-openai-gpt-4o-eu"),
        Some("2")
    );
    assert_eq!(get("x-ratelimit-remaining-requests"), Some("2"));
    assert_eq!(get("x-ratelimit-limit-requests"), Some("3"));
    assert_eq!(get("x-ratelimit-remaining-tokens"), Some("9900"));
}

/// No raw key in rejection messages, headers or Debug output: scopes carry hashes and
/// display names chosen by the caller (alias, masked key).
#[test]
fn no_raw_key_in_rejections_or_debug() {
    let canary = "sk-test-CANARY2";
    let hash = crate::store::hash_key(canary);
    let (adm, _) = engine();
    let masked = crate::store::mask_key(canary);
    let scope = || {
        vec![
            ScopeRequest::new(
                ScopeKey::key(&hash),
                Limits {
                    max_budget: Some(0.0),
                    rpm_limit: Some(0),
                    ..Limits::default()
                },
            )
            .with_display(format!("my-key ({masked})")),
        ]
    };
    let rej = adm.admit(req("a", scope(), est(0.0))).ready().unwrap_err();
    let text = format!("{rej} {rej:?} {:?}", rej.headers);
    assert!(!text.contains("CANARY2"), "{text}");
    assert!(text.contains("sk-...ARY2"));
    let rpm = vec![ScopeRequest::new(
        ScopeKey::key(&hash),
        Limits {
            rpm_limit: Some(0),
            ..Limits::default()
        },
    )];
    let rej = adm.admit(req("b", rpm, est(0.0))).ready().unwrap_err();
    let text = format!("{rej} {rej:?}");
    assert!(!text.contains("CANARY2") && text.contains(&hash));
    let ok = adm
        .admit(req(
            "c",
            vec![ScopeRequest::new(ScopeKey::key(&hash), Limits::default())],
            est(0.0),
        ))
        .ready()
        .unwrap();
    assert!(!format!("{ok:?}").contains("CANARY2"));
}

#[test]
fn a_refusal_caused_by_requests_in_flight_says_so() {
    let (adm, _clock) = engine();
    let scope = ScopeKey::new(ScopeKind::Team, "t");
    let sr = || vec![ScopeRequest::new(scope.clone(), budget(10.0))];
    adm.set_spend(&scope, 6.0, None).ready().unwrap();
    let held = adm.admit(req("a", sr(), est(5.0))).ready().unwrap();
    let rej = adm.admit(req("b", sr(), est(0.5))).ready().unwrap_err();
    assert_eq!(
        rej.message,
        "Budget has been exceeded! Team=t Current cost: 6 (+ 5 reserved by requests in flight), Max budget: 10"
    );
    assert_eq!(
        rej.reason,
        RejectReason::Budget {
            current_cost: 11.0,
            max_budget: 10.0
        }
    );
    drop(held);
    assert!(adm.admit(req("c", sr(), est(0.5))).ready().is_ok());
}
