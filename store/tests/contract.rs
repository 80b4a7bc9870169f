//! The store contract, checked guarantee by guarantee against both backends: the embedded
//! SQLite store and a real etcd (started by the test on loopback ports).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{next, next_events};
use rkube_store::{Compactor, Error, EventKind, RangeRequest, Revision, Store, MAX_VALUE_SIZE};
use tokio::sync::Barrier;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Every contract test, once per backend.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let fixture = crate::common::sqlite();
                    super::$name(fixture.store.clone()).await;
                }
            )*
        }
        mod etcd {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let fixture = crate::common::etcd().await;
                    super::$name(fixture.store.clone()).await;
                }
            )*
        }
    };
}

contract!(
    revisions_count_every_write_once,
    reads_at_past_revisions,
    range_pages_are_consistent_at_one_revision,
    create_of_existing_key_returns_current_value,
    guards_fail_with_the_current_value,
    concurrent_compare_and_swap_has_one_winner_per_round,
    concurrent_increments_lose_no_update,
    watch_delivers_every_event_in_order_under_concurrent_writes,
    watch_resumes_from_a_revision,
    watch_of_one_key_sees_only_that_key,
    watch_events_carry_previous_values,
    slow_watcher_misses_nothing,
    compaction_drops_old_history_only,
    paged_list_at_compacted_revision_fails,
    progress_notification_reports_seen_revision,
    bad_input_is_rejected_and_damages_nothing,
    ranges_and_watches_larger_than_a_grpc_message_come_back_whole,
    the_compactor_compacts_on_its_timer,
);

async fn revisions_count_every_write_once(store: Arc<dyn Store>) {
    let start = store.current_revision().await.unwrap();
    assert_eq!(start, 1, "a new store is at revision 1");

    let a = store.create("/k/a", b("1")).await.unwrap();
    assert_eq!((a.create_revision, a.mod_revision, a.version), (2, 2, 1));

    // A failed write takes no revision.
    assert!(matches!(store.create("/k/a", b("x")).await, Err(Error::AlreadyExists { .. })));
    assert!(matches!(store.update("/k/a", b("x"), 1).await, Err(Error::Conflict { .. })));
    assert_eq!(store.current_revision().await.unwrap(), 2);

    let a2 = store.update("/k/a", b("2"), 2).await.unwrap();
    assert_eq!((a2.create_revision, a2.mod_revision, a2.version), (2, 3, 2));
    let deleted = store.delete("/k/a", Some(3)).await.unwrap();
    assert_eq!(deleted.revision, 4);
    assert_eq!(deleted.prev, a2);
    assert_eq!(store.get("/k/a", None).await.unwrap(), (None, 4));

    // A key created again starts over.
    let again = store.create("/k/a", b("3")).await.unwrap();
    assert_eq!((again.create_revision, again.mod_revision, again.version), (5, 5, 1));
    assert_eq!(store.current_revision().await.unwrap(), 5);
}

async fn reads_at_past_revisions(store: Arc<dyn Store>) {
    let v1 = store.create("/k/a", b("v1")).await.unwrap();
    let v2 = store.update("/k/a", b("v2"), v1.mod_revision).await.unwrap();
    let gone = store.delete("/k/a", None).await.unwrap();

    assert_eq!(
        store.get("/k/a", Some(v1.mod_revision)).await.unwrap(),
        (Some(v1.clone()), v1.mod_revision)
    );
    assert_eq!(store.get("/k/a", Some(v2.mod_revision)).await.unwrap().0, Some(v2.clone()));
    assert_eq!(store.get("/k/a", Some(gone.revision)).await.unwrap().0, None);
    assert_eq!(store.get("/k/a", Some(1)).await.unwrap().0, None, "before it existed");

    match store.get("/k/a", Some(gone.revision + 10)).await {
        Err(Error::FutureRevision { requested, current }) => {
            assert_eq!((requested, current), (gone.revision + 10, gone.revision))
        }
        other => panic!("expected FutureRevision, got {other:?}"),
    }
}

async fn range_pages_are_consistent_at_one_revision(store: Arc<dyn Store>) {
    for i in 0..25 {
        store.create(&format!("/r/pods/{i:03}"), b(&format!("v{i}"))).await.unwrap();
    }
    store.create("/r/pods0", b("outside: the next prefix")).await.unwrap();
    store.create("/r/pod", b("outside: shorter")).await.unwrap();
    let (count, _) = store.count("/r/pods/").await.unwrap();
    assert_eq!(count, 25);

    let first = store.range(RangeRequest::prefix("/r/pods/").limit(10)).await.unwrap();
    assert_eq!(first.kvs.len(), 10);
    assert!(first.more);
    assert_eq!(first.count, 25);
    let keys: Vec<_> = first.kvs.iter().map(|kv| kv.key.clone()).collect();
    assert_eq!(keys[0], "/r/pods/000");
    assert_eq!(keys[9], "/r/pods/009");

    // Writes between pages do not show in later pages read at the first page's revision.
    let at = first.revision;
    let k15 = store.get("/r/pods/015", None).await.unwrap().0.unwrap();
    store.update("/r/pods/015", b("changed"), k15.mod_revision).await.unwrap();
    store.delete("/r/pods/020", None).await.unwrap();
    store.create("/r/pods/012a", b("new")).await.unwrap();

    let mut all = first.kvs.clone();
    let mut from = format!("{}\0", keys[9]);
    loop {
        let page = store
            .range(RangeRequest::prefix("/r/pods/").limit(10).continue_from(&from).at_revision(at))
            .await
            .unwrap();
        assert_eq!(page.revision, at);
        all.extend(page.kvs.iter().cloned());
        if !page.more {
            break;
        }
        from = format!("{}\0", page.kvs.last().unwrap().key);
    }
    assert_eq!(all.len(), 25, "the pages show the 25 keys of the first page's revision");
    let values: BTreeMap<_, _> = all.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect();
    assert_eq!(values["/r/pods/015"], b("v15"));
    assert_eq!(values["/r/pods/020"], b("v20"));
    assert!(!values.contains_key("/r/pods/012a"));

    // The latest revision shows the writes.
    let now = store.range(RangeRequest::prefix("/r/pods/")).await.unwrap();
    assert_eq!(now.kvs.len(), 25);
    assert!(!now.more);
    assert!(now.revision > at);
    let values: BTreeMap<_, _> =
        now.kvs.iter().map(|kv| (kv.key.clone(), kv.value.clone())).collect();
    assert_eq!(values["/r/pods/015"], b("changed"));
    assert!(values.contains_key("/r/pods/012a"));

    // An empty prefix is every key.
    let everything = store.range(RangeRequest::prefix("")).await.unwrap();
    assert_eq!(everything.kvs.len(), 27);
}

async fn create_of_existing_key_returns_current_value(store: Arc<dyn Store>) {
    let first = store.create("/k/a", b("first")).await.unwrap();
    match store.create("/k/a", b("second")).await {
        Err(Error::AlreadyExists { current }) => assert_eq!(current, first),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert_eq!(store.get("/k/a", None).await.unwrap().0.unwrap().value, b("first"));
}

async fn guards_fail_with_the_current_value(store: Arc<dyn Store>) {
    let v1 = store.create("/k/a", b("v1")).await.unwrap();
    let v2 = store.update("/k/a", b("v2"), v1.mod_revision).await.unwrap();

    // A stale update answers with the current value.
    match store.update("/k/a", b("stale"), v1.mod_revision).await {
        Err(Error::Conflict { current }) => assert_eq!(current, Some(v2.clone())),
        other => panic!("expected Conflict, got {other:?}"),
    }
    match store.delete("/k/a", Some(v1.mod_revision)).await {
        Err(Error::Conflict { current }) => assert_eq!(current, Some(v2.clone())),
        other => panic!("expected Conflict, got {other:?}"),
    }
    // Missing keys: an update never creates, a guarded delete conflicts, a plain one is NotFound.
    match store.update("/k/missing", b("x"), v1.mod_revision).await {
        Err(Error::Conflict { current: None }) => {}
        other => panic!("expected Conflict with no current value, got {other:?}"),
    }
    match store.update("/k/missing", b("x"), 0).await {
        Err(Error::Conflict { current: None }) => {}
        other => panic!("expected Conflict with no current value, got {other:?}"),
    }
    assert_eq!(store.get("/k/missing", None).await.unwrap().0, None);
    assert!(matches!(
        store.delete("/k/missing", Some(3)).await,
        Err(Error::Conflict { current: None })
    ));
    match store.delete("/k/missing", None).await {
        Err(Error::NotFound { key }) => assert_eq!(key, "/k/missing"),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert_eq!(store.get("/k/a", None).await.unwrap().0, Some(v2));
}

async fn concurrent_compare_and_swap_has_one_winner_per_round(store: Arc<dyn Store>) {
    const WRITERS: usize = 16;
    const ROUNDS: usize = 20;
    store.create("/cas/key", b("start")).await.unwrap();
    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (store, barrier) = (store.clone(), barrier.clone());
        tasks.push(tokio::spawn(async move {
            let mut wins = Vec::new();
            for round in 0..ROUNDS {
                // Everyone reads the same revision, then everyone tries to swap from it.
                barrier.wait().await;
                let current = store.get("/cas/key", None).await.unwrap().0.unwrap();
                barrier.wait().await;
                let value = Bytes::from(format!("round {round} writer {w}"));
                match store.update("/cas/key", value, current.mod_revision).await {
                    Ok(kv) => wins.push((round, kv.mod_revision)),
                    Err(Error::Conflict { current: Some(now) }) => {
                        assert!(now.mod_revision > current.mod_revision)
                    }
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            wins
        }));
    }
    let mut winners_per_round = vec![0; ROUNDS];
    for task in tasks {
        for (round, _) in task.await.unwrap() {
            winners_per_round[round] += 1;
        }
    }
    assert_eq!(winners_per_round, vec![1; ROUNDS], "exactly one winner each round");
    let last = store.get("/cas/key", None).await.unwrap().0.unwrap();
    assert_eq!(last.version, 1 + ROUNDS as i64);
}

async fn concurrent_increments_lose_no_update(store: Arc<dyn Store>) {
    const WRITERS: usize = 16;
    const EACH: usize = 25;
    store.create("/cas/counter", b("0")).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut current = store.get("/cas/counter", None).await.unwrap().0.unwrap();
            for _ in 0..EACH {
                loop {
                    let n: u64 = std::str::from_utf8(&current.value).unwrap().parse().unwrap();
                    match store
                        .update(
                            "/cas/counter",
                            Bytes::from((n + 1).to_string()),
                            current.mod_revision,
                        )
                        .await
                    {
                        Ok(_) => break,
                        // Retry from the value the failed guard returned: no extra read.
                        Err(Error::Conflict { current: Some(now) }) => current = now,
                        Err(e) => panic!("unexpected error {e}"),
                    }
                }
                current = store.get("/cas/counter", None).await.unwrap().0.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let counter = store.get("/cas/counter", None).await.unwrap().0.unwrap();
    assert_eq!(counter.value, Bytes::from((WRITERS * EACH).to_string()));
    assert_eq!(counter.version, 1 + (WRITERS * EACH) as i64);
}

async fn watch_delivers_every_event_in_order_under_concurrent_writes(store: Arc<dyn Store>) {
    const WRITERS: usize = 8;
    const EACH: usize = 40;
    let mut watch = store.watch("/w/", true, 0).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let key = format!("/w/{w}");
            let mut kv = store.create(&key, b("0")).await.unwrap();
            acked.push(kv.mod_revision);
            for i in 1..EACH {
                kv = store.update(&key, Bytes::from(i.to_string()), kv.mod_revision).await.unwrap();
                acked.push(kv.mod_revision);
            }
            store.create(&format!("/other/{w}"), b("not watched")).await.unwrap();
            acked
        }));
    }
    let mut acked = BTreeSet::new();
    for task in tasks {
        acked.extend(task.await.unwrap());
    }
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < acked.len() && Instant::now() < deadline {
        let response = next_events(&mut watch).await;
        for event in response.events {
            assert!(event.kv.key.starts_with("/w/"));
            let expected_value = (event.kv.version - 1).to_string();
            assert_eq!(event.kv.value, Bytes::from(expected_value));
            if event.kv.version > 1 {
                assert_eq!(event.prev.as_ref().unwrap().version, event.kv.version - 1);
            } else {
                assert!(event.prev.is_none());
            }
            seen.push(event.revision());
        }
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "revisions strictly increase: no duplicates");
    assert_eq!(
        seen.iter().copied().collect::<BTreeSet<_>>(),
        acked,
        "every acknowledged write, no other"
    );
}

async fn watch_resumes_from_a_revision(store: Arc<dyn Store>) {
    let mut revisions = Vec::new();
    for i in 0..10 {
        revisions.push(store.create(&format!("/res/{i}"), b("x")).await.unwrap().mod_revision);
    }
    // Resume from the sixth write: it and everything after, then live events.
    let mut watch = store.watch("/res/", true, revisions[5]).await.unwrap();
    let mut got: Vec<Revision> = Vec::new();
    while got.len() < 5 {
        got.extend(next_events(&mut watch).await.events.iter().map(|e| e.revision()));
    }
    assert_eq!(got, revisions[5..].to_vec());
    let live = store.create("/res/live", b("y")).await.unwrap();
    let response = next_events(&mut watch).await;
    assert_eq!(response.events.len(), 1);
    assert_eq!(response.events[0].kv, live);
    assert_eq!(response.revision, live.mod_revision);
}

async fn watch_of_one_key_sees_only_that_key(store: Arc<dyn Store>) {
    let mut watch = store.watch("/one/a", false, 0).await.unwrap();
    store.create("/one/ab", b("longer key")).await.unwrap();
    store.create("/one/", b("shorter key")).await.unwrap();
    let a = store.create("/one/a", b("this")).await.unwrap();
    let response = next_events(&mut watch).await;
    assert_eq!(response.events.len(), 1);
    assert_eq!(response.events[0].kv, a);
}

async fn watch_events_carry_previous_values(store: Arc<dyn Store>) {
    let mut watch = store.watch("/prev/", true, 0).await.unwrap();
    let v1 = store.create("/prev/a", b("v1")).await.unwrap();
    let v2 = store.update("/prev/a", b("v2"), v1.mod_revision).await.unwrap();
    let gone = store.delete("/prev/a", None).await.unwrap();
    let mut events = Vec::new();
    while events.len() < 3 {
        events.extend(next_events(&mut watch).await.events);
    }
    assert_eq!(events[0].kind, EventKind::Put);
    assert_eq!(events[0].kv, v1);
    assert_eq!(events[0].prev, None);
    assert_eq!(events[1].kind, EventKind::Put);
    assert_eq!(events[1].kv, v2);
    assert_eq!(events[1].prev, Some(v1.clone()));
    assert_eq!(events[2].kind, EventKind::Delete);
    assert_eq!(events[2].kv.key, "/prev/a");
    assert_eq!(events[2].kv.mod_revision, gone.revision);
    assert!(events[2].kv.value.is_empty());
    assert_eq!(events[2].prev, Some(v2));

    // The same history, replayed from the log, is identical.
    let mut replay = store.watch("/prev/", true, v1.mod_revision).await.unwrap();
    let mut replayed = Vec::new();
    while replayed.len() < 3 {
        replayed.extend(next_events(&mut replay).await.events);
    }
    assert_eq!(replayed, events);
}

async fn slow_watcher_misses_nothing(store: Arc<dyn Store>) {
    // A watcher that does not read while a thousand writes go by gets every one, in order.
    let mut watch = store.watch("/slow/", true, 0).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..64 {
                let kv = store
                    .create(&format!("/slow/{w}/{i}"), Bytes::from(vec![b'x'; 512]))
                    .await
                    .unwrap();
                revisions.push(kv.mod_revision);
            }
            revisions
        }));
    }
    let mut acked = BTreeSet::new();
    for task in tasks {
        acked.extend(task.await.unwrap());
    }
    let mut seen = Vec::new();
    while seen.len() < acked.len() {
        seen.extend(next_events(&mut watch).await.events.iter().map(|e| e.revision()));
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), acked);
}

async fn compaction_drops_old_history_only(store: Arc<dyn Store>) {
    let a1 = store.create("/c/a", b("a1")).await.unwrap();
    let b1 = store.create("/c/b", b("b1")).await.unwrap();
    let a2 = store.update("/c/a", b("a2"), a1.mod_revision).await.unwrap();
    store.delete("/c/b", None).await.unwrap();
    let c1 = store.create("/c/c", b("c1")).await.unwrap();
    let a3 = store.update("/c/a", b("a3"), a2.mod_revision).await.unwrap();
    let at = c1.mod_revision;

    store.compact(at).await.unwrap();

    // Older revisions are gone for reads and watches.
    assert!(matches!(store.get("/c/a", Some(a1.mod_revision)).await, Err(Error::Compacted { .. })));
    assert!(matches!(
        store.range(RangeRequest::prefix("/c/").at_revision(b1.mod_revision)).await,
        Err(Error::Compacted { .. })
    ));
    match store.watch("/c/", true, a2.mod_revision).await {
        Err(Error::Compacted { requested, .. }) => assert_eq!(requested, a2.mod_revision),
        Err(e) => panic!("expected Compacted, got {e}"),
        Ok(_) => panic!("expected Compacted, got a watch"),
    }
    // The compact revision itself and everything after stay.
    let state = store.range(RangeRequest::prefix("/c/").at_revision(at)).await.unwrap();
    let keys: Vec<_> = state.kvs.iter().map(|kv| (kv.key.as_str(), kv.value.clone())).collect();
    assert_eq!(keys, vec![("/c/a", b("a2")), ("/c/c", b("c1"))]);
    assert_eq!(store.get("/c/a", None).await.unwrap().0, Some(a3.clone()));
    let mut watch = store.watch("/c/", true, at).await.unwrap();
    let mut events = Vec::new();
    while events.len() < 2 {
        events.extend(next_events(&mut watch).await.events);
    }
    assert_eq!(events[0].kv, c1);
    assert_eq!(events[1].kv, a3);
    assert_eq!(events[1].prev, Some(a2), "the previous value survives compaction");

    // Compacting again to the same or an older revision, or to the future, fails.
    assert!(matches!(store.compact(at).await, Err(Error::Compacted { .. })));
    let current = store.current_revision().await.unwrap();
    assert!(matches!(store.compact(current + 5).await, Err(Error::FutureRevision { .. })));
    store.compact(current).await.unwrap();
    assert_eq!(store.get("/c/a", None).await.unwrap().0, Some(a3));
    assert_eq!(store.count("/c/").await.unwrap().0, 2);
}

async fn paged_list_at_compacted_revision_fails(store: Arc<dyn Store>) {
    for i in 0..6 {
        store.create(&format!("/p/{i}"), b("x")).await.unwrap();
    }
    let first = store.range(RangeRequest::prefix("/p/").limit(2)).await.unwrap();
    let kv = store.get("/p/3", None).await.unwrap().0.unwrap();
    let later = store.update("/p/3", b("y"), kv.mod_revision).await.unwrap();
    store.compact(later.mod_revision).await.unwrap();
    let from = format!("{}\0", first.kvs[1].key);
    let next_page = store
        .range(
            RangeRequest::prefix("/p/").limit(2).continue_from(&from).at_revision(first.revision),
        )
        .await;
    assert!(matches!(next_page, Err(Error::Compacted { .. })), "got {next_page:?}");
}

async fn progress_notification_reports_seen_revision(store: Arc<dyn Store>) {
    let watch = store.watch("/prog/a/", true, 0).await.unwrap();
    let mut watch = watch;
    let other = store.create("/prog/b/x", b("unwatched")).await.unwrap();
    // Ask until the notification covers the unwatched write (a backend may answer with an
    // earlier revision while it is still catching up).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        watch.request_progress();
        let response = next(&mut watch).await.unwrap();
        assert!(response.is_progress(), "no events were written under the prefix");
        if response.revision >= other.mod_revision {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "progress never reached revision {}",
            other.mod_revision
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Events after the notification still arrive.
    let a = store.create("/prog/a/y", b("watched")).await.unwrap();
    assert_eq!(next_events(&mut watch).await.events[0].kv, a);
}

async fn bad_input_is_rejected_and_damages_nothing(store: Arc<dyn Store>) {
    let kept = store.create("/bad/kept", b("safe")).await.unwrap();
    let before = store.current_revision().await.unwrap();

    assert!(matches!(store.create("", b("x")).await, Err(Error::InvalidKey { .. })));
    assert!(matches!(store.update("", b("x"), 1).await, Err(Error::InvalidKey { .. })));
    assert!(matches!(store.delete("", None).await, Err(Error::InvalidKey { .. })));
    let huge = Bytes::from(vec![b'z'; MAX_VALUE_SIZE + 1]);
    match store.create("/bad/huge", huge.clone()).await {
        Err(Error::ValueTooLarge { size, limit, .. }) => {
            assert_eq!((size, limit), (MAX_VALUE_SIZE + 1, MAX_VALUE_SIZE))
        }
        other => panic!("expected ValueTooLarge, got {other:?}"),
    }
    assert!(matches!(
        store.update("/bad/kept", huge, kept.mod_revision).await,
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(store.current_revision().await.unwrap(), before, "nothing was written");
    assert_eq!(store.get("/bad/kept", None).await.unwrap().0, Some(kept));
    assert_eq!(store.get("/bad/huge", None).await.unwrap().0, None);

    // Exactly at the limit is fine, and comes back whole.
    let max = Bytes::from(vec![b'm'; MAX_VALUE_SIZE]);
    store.create("/bad/max", max.clone()).await.unwrap();
    assert_eq!(store.get("/bad/max", None).await.unwrap().0.unwrap().value, max);
}

async fn ranges_and_watches_larger_than_a_grpc_message_come_back_whole(store: Arc<dyn Store>) {
    // Six values of 1 MiB: more than gRPC's default 4 MiB message limit in one answer.
    let value = Bytes::from(vec![b'L'; 1 << 20]);
    let mut first = 0;
    for i in 0..6 {
        let kv = store.create(&format!("/large/{i}"), value.clone()).await.unwrap();
        if i == 0 {
            first = kv.mod_revision;
        }
    }
    let all = store.range(RangeRequest::prefix("/large/")).await.unwrap();
    assert_eq!(all.kvs.len(), 6);
    assert!(all.kvs.iter().all(|kv| kv.value == value));
    let mut watch = store.watch("/large/", true, first).await.unwrap();
    let mut seen = 0;
    while seen < 6 {
        let response = next_events(&mut watch).await;
        assert!(response.events.iter().all(|e| e.kv.value == value));
        seen += response.events.len();
    }
    assert_eq!(seen, 6);
}

async fn the_compactor_compacts_on_its_timer(store: Arc<dyn Store>) {
    let old = store.create("/timer/a", b("old")).await.unwrap();
    let new = store.update("/timer/a", b("new"), old.mod_revision).await.unwrap();
    store.create("/timer/b", b("later")).await.unwrap();
    let _compactor = Compactor::spawn(store.clone(), Duration::from_millis(100));
    // Each tick compacts to the revision of the tick before: soon the first write is history.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.get("/timer/a", Some(old.mod_revision)).await {
            Err(Error::Compacted { .. }) => break,
            Ok(_) => {}
            Err(e) => panic!("unexpected error {e}"),
        }
        assert!(Instant::now() < deadline, "the compactor did not compact within 10 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(store.get("/timer/a", None).await.unwrap().0, Some(new));
}
