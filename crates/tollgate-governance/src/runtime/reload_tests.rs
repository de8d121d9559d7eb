//! [`Governance::reload_identities`]: two hubs over one database play two replicas; what one
//! writes, the other sees after a reload, with its own spend counters and traffic-seen end
//! users intact.

use std::sync::Arc;

use super::feed::{ChangeFeed, ChangeKind};
use super::*;
use crate::store::{SqliteStore, Team, VerificationToken};

async fn two_replicas() -> (Governance, Governance) {
    let store: Arc<dyn GovernanceStore> = Arc::new(SqliteStore::open(":memory:").await.unwrap());
    store.migrate().await.unwrap();
    let open = || {
        Governance::open(
            Arc::clone(&store),
            PriceTable::new(),
            GovernanceOptions::default(),
        )
    };
    (open().await.unwrap(), open().await.unwrap())
}

fn key(token: &str, team: Option<&str>) -> VerificationToken {
    VerificationToken {
        token: token.into(),
        team_id: team.map(str::to_owned),
        ..VerificationToken::default()
    }
}

#[tokio::test]
async fn a_write_on_one_replica_reaches_the_other_after_a_reload() {
    let (a, b) = two_replicas().await;
    let (feed, mut changes) = ChangeFeed::new("A", 16);
    assert!(a.announce_writes(feed.clone()));
    assert!(!a.announce_writes(feed), "announced once");

    a.store().upsert_key(&key("k1", None)).await.unwrap();
    assert_eq!(
        changes.try_recv().unwrap(),
        super::feed::Change::new(ChangeKind::Key, "k1")
    );
    assert!(matches!(b.principal("k1"), Err(KeyError::NotFound(_))));
    let r = b.reload_identities().await.unwrap();
    assert_eq!((r.keys, r.changed, r.removed), (1, 1, 0));
    assert!(b.principal("k1").is_ok());

    // spend lives in the counters: a reload leaves it
    b.admission()
        .set_spend(&crate::admission::ScopeKey::key("k1"), 0.75, None)
        .await
        .unwrap();
    let r = b.reload_identities().await.unwrap();
    assert_eq!((r.changed, r.removed), (0, 0), "nothing changed");
    let spend = b
        .spend_of(&crate::admission::ScopeKey::key("k1"))
        .await
        .unwrap();
    assert!((spend - 0.75).abs() < 1e-12);

    // blocked on A → refused on B
    let blocked = VerificationToken {
        blocked: Some(true),
        ..key("k1", None)
    };
    a.store().upsert_key(&blocked).await.unwrap();
    b.reload_identities().await.unwrap();
    assert!(matches!(b.principal("k1"), Err(KeyError::Blocked)));

    // deleted on A → unknown on B
    a.store().delete_keys(&["k1".into()], None).await.unwrap();
    let r = b.reload_identities().await.unwrap();
    assert_eq!((r.keys, r.removed), (0, 1));
    assert!(matches!(b.principal("k1"), Err(KeyError::NotFound(_))));
}

#[tokio::test]
async fn a_team_change_reaches_its_keys_principals() {
    let (a, b) = two_replicas().await;
    let team = Team {
        team_id: "t1".into(),
        max_budget: Some(10.0),
        ..Team::default()
    };
    a.store().upsert_team(&team).await.unwrap();
    a.store().upsert_key(&key("k2", Some("t1"))).await.unwrap();
    b.reload_identities().await.unwrap();
    assert_eq!(
        b.principal("k2").unwrap().team.as_ref().unwrap().max_budget,
        Some(10.0)
    );
    a.store()
        .upsert_team(&Team {
            max_budget: Some(2.5),
            ..team.clone()
        })
        .await
        .unwrap();
    b.reload_identities().await.unwrap();
    assert_eq!(
        b.principal("k2").unwrap().team.as_ref().unwrap().max_budget,
        Some(2.5),
        "the key's principal carries the lowered team budget"
    );
    a.store()
        .upsert_team(&Team {
            blocked: true,
            ..team
        })
        .await
        .unwrap();
    b.reload_identities().await.unwrap();
    assert!(matches!(b.principal("k2"), Err(KeyError::TeamBlocked(t)) if t == "t1"));
}

#[tokio::test]
async fn end_users_seen_in_traffic_survive_a_reload_until_written() {
    let (_a, b) = two_replicas().await;
    let facts = RequestFacts {
        model_group: "m",
        end_user: Some("cust-new"),
        ..RequestFacts::default()
    };
    b.scopes(None, facts).unwrap();
    assert!(b.cache().read().end_users.contains_key("cust-new"));
    let r = b.reload_identities().await.unwrap();
    assert_eq!(
        (r.kept_local, r.removed),
        (1, 0),
        "kept, not counted as removed"
    );
    assert!(b.cache().read().end_users.contains_key("cust-new"));

    // its row is written (the write-behind inserts it with its spend): kept as stored now
    b.store()
        .upsert_end_user(&crate::store::EndUser {
            user_id: "cust-new".into(),
            spend: 0.5,
            ..Default::default()
        })
        .await
        .unwrap();
    let r = b.reload_identities().await.unwrap();
    assert_eq!(r.kept_local, 0);
    assert!((b.cache().read().end_users["cust-new"].spend - 0.5).abs() < 1e-12);

    // once the database lost it (deleted by another replica), a reload drops it too
    b.store()
        .delete_end_users(&["cust-new".into()])
        .await
        .unwrap();
    b.reload_identities().await.unwrap();
    assert!(!b.cache().read().end_users.contains_key("cust-new"));
}

#[tokio::test]
async fn a_load_that_may_predate_a_local_write_is_not_swapped_in() {
    let (a, _b) = two_replicas().await;
    let before = a.cache().generation();
    let stale = Entities::from_snapshot(a.store().load().await.unwrap());
    // a management write on this replica, store then cache, while the load was out
    a.store().upsert_key(&key("k3", None)).await.unwrap();
    a.cache().update(|e| {
        e.keys.insert("k3".into(), Arc::new(key("k3", None)));
    });
    assert!(
        a.cache()
            .replace_unless_written_since(stale, before)
            .is_err()
    );
    assert!(
        a.principal("k3").is_ok(),
        "the local write is still in force"
    );
    // the reload loads again and sees it
    a.reload_identities().await.unwrap();
    assert!(a.principal("k3").is_ok());
}

/// While this replica's management writes keep coming during every load, a reload swaps
/// nothing in (each load may predate a write: a key created a moment ago would vanish from the
/// cache) and says so; once they stop, the next reload swaps in what the database holds.
#[tokio::test]
async fn a_reload_that_meets_a_local_write_in_every_load_keeps_the_cache() {
    let (a, b) = two_replicas().await;
    let b = Arc::new(b);
    b.cache().update(|e| {
        e.keys.insert("local".into(), Arc::new(key("local", None)));
    });
    a.store().upsert_key(&key("remote", None)).await.unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (b, stop) = (Arc::clone(&b), Arc::clone(&stop));
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                b.cache().update(|_| ());
                tokio::task::yield_now().await;
            }
        })
    };
    let r = b.reload_identities().await;
    assert!(
        matches!(r, Err(StoreError::WrittenDuringReload(5))),
        "{r:?}"
    );
    assert!(b.principal("local").is_ok(), "the local write stays");
    assert!(b.principal("remote").is_err(), "nothing was swapped in");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.await.unwrap();
    let r = b.reload_identities().await.unwrap();
    assert_eq!(r.keys, 1, "the database's one key");
    assert!(b.principal("remote").is_ok());
}
