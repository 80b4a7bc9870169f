//! Fixtures shared by the store's test files: a fresh store of each backend.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use rkube_store::testing::EtcdServer;
use rkube_store::{
    EtcdOptions, EtcdStore, Result, SqliteOptions, SqliteStore, Store, WatchResponse, WatchStream,
};

/// A store under test, with whatever keeps it alive (a temp dir, an etcd process).
pub struct Fixture {
    pub store: Arc<dyn Store>,
    _guard: Box<dyn std::any::Any + Send>,
}

pub fn sqlite() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path(), SqliteOptions::default()).expect("open sqlite store");
    Fixture { store: Arc::new(store), _guard: Box::new(dir) }
}

pub async fn etcd() -> Fixture {
    let server = tokio::task::spawn_blocking(EtcdServer::start).await.expect("start etcd");
    let store =
        EtcdStore::connect(EtcdOptions::new([server.client_url()])).await.expect("connect to etcd");
    Fixture { store: Arc::new(store), _guard: Box::new(server) }
}

/// The next watch response, failing the test after 10 s.
pub async fn next(stream: &mut WatchStream) -> Result<WatchResponse> {
    tokio::time::timeout(Duration::from_secs(10), stream.recv())
        .await
        .expect("no watch response within 10 s")
        .expect("watch ended")
}

/// The next response that carries events (skipping progress notifications).
pub async fn next_events(stream: &mut WatchStream) -> WatchResponse {
    loop {
        let response = next(stream).await.expect("watch failed");
        if !response.is_progress() {
            return response;
        }
    }
}
