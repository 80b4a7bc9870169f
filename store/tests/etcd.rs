//! What only the etcd backend has: a remote server that can be missing or die.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use rkube_store::testing::{free_port, EtcdServer};
use rkube_store::{Error, EtcdOptions, EtcdStore, Store};

#[tokio::test]
async fn an_unreachable_etcd_is_reported_clearly_and_quickly() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let mut options = EtcdOptions::new([url.clone()]);
    options.connect_timeout = Duration::from_secs(2);
    let started = Instant::now();
    match EtcdStore::connect(options).await {
        Err(Error::Unavailable(message)) => {
            assert!(message.contains("cannot reach etcd"), "{message}");
            assert!(message.contains(&url), "names the endpoint: {message}");
        }
        Err(e) => panic!("expected Unavailable, got {e:?}"),
        Ok(_) => panic!("connected to nothing"),
    }
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn no_endpoints_is_an_error() {
    assert!(matches!(
        EtcdStore::connect(EtcdOptions::new(Vec::<String>::new())).await,
        Err(Error::Unavailable(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_going_away_fails_calls_and_ends_watches() {
    let server = tokio::task::spawn_blocking(EtcdServer::start).await.unwrap();
    let mut options = EtcdOptions::new([server.client_url()]);
    options.request_timeout = Duration::from_secs(3);
    let store = EtcdStore::connect(options).await.unwrap();
    store.create("/gone/a", Bytes::from("x")).await.unwrap();
    let mut watch = store.watch("/gone/", true, 0).await.unwrap();
    drop(server); // kills etcd

    let started = Instant::now();
    let result = store.create("/gone/b", Bytes::from("y")).await;
    assert!(matches!(result, Err(Error::Unavailable(_))), "got {result:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    let ended =
        tokio::time::timeout(Duration::from_secs(10), watch.recv()).await.expect("watch hung");
    assert!(matches!(ended, Some(Err(_)) | None), "got {ended:?}");
}
