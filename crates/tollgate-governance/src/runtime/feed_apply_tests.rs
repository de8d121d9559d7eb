//! [`apply_changes`] against a fake feed (requests raised by the test) and a fake target that
//! counts its refreshes, on tokio's paused clock (timings exact, no real waiting).

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use super::*;

#[derive(Default)]
struct Fake {
    identities: AtomicUsize,
    models: AtomicUsize,
    /// Identity refreshes to fail before succeeding.
    fail_identities: AtomicUsize,
    /// How long an identity refresh takes.
    load_time: Mutex<Duration>,
}

#[async_trait]
impl RefreshTarget for Fake {
    async fn refresh_identities(&self) -> Result<(), RefreshError> {
        let d = *self.load_time.lock().unwrap();
        tokio::time::sleep(d).await;
        if self
            .fail_identities
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(RefreshError("database unreachable".into()));
        }
        self.identities.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
    async fn refresh_models(&self) -> Result<(), RefreshError> {
        self.models.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

struct Running {
    fake: Arc<Fake>,
    req: Arc<RefreshRequests>,
    stats: Arc<FeedStats>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn start(fake: Fake, opts: ApplyOptions) -> Running {
    let fake = Arc::new(fake);
    let req = Arc::new(RefreshRequests::default());
    let stats = Arc::new(FeedStats::default());
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(apply_changes(
        Arc::clone(&fake) as Arc<dyn RefreshTarget>,
        Arc::clone(&req),
        opts,
        Arc::clone(&stats),
        rx,
    ));
    Running {
        fake,
        req,
        stats,
        stop,
        task,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn counts(r: &Running) -> (usize, usize) {
    (
        r.fake.identities.load(Ordering::Acquire),
        r.fake.models.load(Ordering::Acquire),
    )
}

const NO_RECONCILE: ApplyOptions = ApplyOptions {
    coalesce: Duration::from_millis(50),
    reconcile: None,
    retry: Duration::from_secs(1),
};

#[tokio::test(start_paused = true)]
async fn a_burst_costs_one_refresh_after_the_window() {
    let r = start(Fake::default(), NO_RECONCILE);
    for i in 0..100 {
        r.req.request(if i % 2 == 0 {
            ChangeKind::Key
        } else {
            ChangeKind::Team
        });
        tokio::time::sleep(ms(0)).await;
    }
    tokio::time::sleep(ms(49)).await;
    assert_eq!(counts(&r), (0, 0), "nothing before the window closes");
    tokio::time::sleep(ms(2)).await;
    assert_eq!(counts(&r), (1, 0), "one identity refresh, no model reload");
    tokio::time::sleep(ms(500)).await;
    assert_eq!(counts(&r), (1, 0), "and nothing more without a request");
    r.req.request(ChangeKind::Model);
    tokio::time::sleep(ms(51)).await;
    assert_eq!(counts(&r), (1, 1), "a model change reloads only models");
    assert_eq!(FeedStats::get(&r.stats.refreshes), 1);
    let _ = r.stop.send(true);
    r.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_request_during_a_refresh_is_not_lost() {
    let fake = Fake::default();
    *fake.load_time.lock().unwrap() = ms(200);
    let r = start(fake, NO_RECONCILE);
    r.req.request(ChangeKind::Key);
    // window 50 ms, then the load runs until 250 ms; a change arrives at 100 ms
    tokio::time::sleep(ms(100)).await;
    r.req.request(ChangeKind::Key);
    tokio::time::sleep(ms(151)).await;
    assert_eq!(counts(&r), (1, 0));
    // 250 + 50 window + 200 load
    tokio::time::sleep(ms(250)).await;
    assert_eq!(
        counts(&r),
        (2, 0),
        "the change heard mid-load gets its own load"
    );
    let _ = r.stop.send(true);
    r.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_reconcile_refreshes_both_every_period_without_any_change() {
    let r = start(
        Fake::default(),
        ApplyOptions {
            reconcile: Some(Duration::from_secs(2)),
            ..NO_RECONCILE
        },
    );
    tokio::time::sleep(ms(1999)).await;
    assert_eq!(counts(&r), (0, 0));
    tokio::time::sleep(ms(2)).await;
    assert_eq!(counts(&r), (1, 1));
    tokio::time::sleep(ms(4000)).await;
    assert_eq!(counts(&r), (3, 3));
    let _ = r.stop.send(true);
    r.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_is_retried_after_the_retry_delay() {
    let fake = Fake::default();
    fake.fail_identities.store(2, Ordering::Release);
    let r = start(fake, NO_RECONCILE);
    r.req.request(ChangeKind::User);
    tokio::time::sleep(ms(51)).await;
    assert_eq!(FeedStats::get(&r.stats.refresh_errors), 1);
    assert_eq!(counts(&r), (0, 0));
    // retry after 1 s (+ window): fails again; the next one succeeds
    tokio::time::sleep(ms(1051)).await;
    assert_eq!(FeedStats::get(&r.stats.refresh_errors), 2);
    tokio::time::sleep(ms(1051)).await;
    assert_eq!(counts(&r), (1, 0));
    assert_eq!(FeedStats::get(&r.stats.refreshes), 1);
    let _ = r.stop.send(true);
    r.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_resync_asks_for_both_and_stop_ends_the_loop() {
    let r = start(Fake::default(), NO_RECONCILE);
    r.req.request_all();
    tokio::time::sleep(ms(51)).await;
    assert_eq!(counts(&r), (1, 1));
    // a kind from a newer version refreshes both too
    r.req.request(ChangeKind::Other);
    tokio::time::sleep(ms(51)).await;
    assert_eq!(counts(&r), (2, 2));
    let _ = r.stop.send(true);
    tokio::time::timeout(ms(10), r.task)
        .await
        .expect("stopped at once")
        .unwrap();
}
