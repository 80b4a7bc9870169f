//! The etcd backend: the [`Store`] contract over a real etcd cluster, through `etcd-client`.
//!
//! Guarded writes are etcd transactions comparing `mod_revision` (and `version > 0`, so a
//! guard never matches a missing key), whose failure branch reads the key, so a failed guard
//! answers with the current value in the same round trip. Watches ask for previous values.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, EventType,
    GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};

use crate::error::{Error, Result};
use crate::keys::{check_key, check_value, prefix_end};
use crate::types::{
    Deleted, Event, EventKind, KeyValue, RangeRequest, RangeResponse, Revision, WatchResponse,
};
use crate::watch::{WatchSender, WatchStream};
use crate::Store;

/// How to reach etcd.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// Client URLs, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// How long connecting may take before the store reports etcd unreachable.
    pub connect_timeout: Duration,
    /// How long one request may take.
    pub request_timeout: Duration,
}

impl EtcdOptions {
    /// Options for these endpoints with the default timeouts (5 s to connect, 30 s a request).
    pub fn new(endpoints: impl IntoIterator<Item = impl Into<String>>) -> EtcdOptions {
        EtcdOptions {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
        }
    }
}

/// The store on etcd. Cheap to clone: clones share one gRPC connection.
#[derive(Clone)]
pub struct EtcdStore {
    client: Client,
    endpoints: String,
}

/// The largest request the client sends: a value of up to 3 MiB and its key. (etcd itself
/// refuses requests above its `--max-request-bytes`, 1.5 MiB by default.)
const MAX_REQUEST: usize = crate::types::MAX_VALUE_SIZE + 1024 * 1024;
/// The largest response the client takes: a range or a watch response can hold many values,
/// so, as kube-apiserver does, accept anything gRPC can carry.
const MAX_RESPONSE: usize = i32::MAX as usize;

impl EtcdStore {
    /// Connects, and checks that etcd answers: an unreachable etcd fails here with
    /// [`Error::Unavailable`] after `connect_timeout`, not at the first request.
    pub async fn connect(options: EtcdOptions) -> Result<EtcdStore> {
        let endpoints = options.endpoints.join(",");
        if options.endpoints.is_empty() {
            return Err(Error::Unavailable("no etcd endpoints given".into()));
        }
        let connect = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_timeout(options.request_timeout)
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        let unreachable = |e: String| {
            Error::Unavailable(format!(
                "cannot reach etcd at {endpoints}: {e}; check that etcd runs and that \
                 --etcd-servers names its client URLs"
            ))
        };
        let client = tokio::time::timeout(
            options.connect_timeout,
            Client::connect(&options.endpoints, Some(connect)),
        )
        .await
        .map_err(|_| unreachable("connection timed out".into()))?
        .map_err(|e| unreachable(e.to_string()))?;
        let store = EtcdStore { client, endpoints: endpoints.clone() };
        tokio::time::timeout(options.connect_timeout, store.current_revision())
            .await
            .map_err(|_| unreachable("no answer".into()))?
            .map_err(|e| unreachable(e.to_string()))?;
        Ok(store)
    }

    fn kv(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE)
            .max_encoding_message_size(MAX_REQUEST)
    }

    /// Maps an etcd error to a store error. `requested` is the revision the call asked for.
    async fn error(&self, e: etcd_client::Error, requested: Revision) -> Error {
        match &e {
            etcd_client::Error::GRpcStatus(status) => {
                let message = status.message();
                if message.contains("required revision has been compacted") {
                    // etcd does not say which revision it compacted to.
                    Error::Compacted { requested, compacted: 0 }
                } else if message.contains("required revision is a future revision") {
                    let current = Box::pin(self.current_revision()).await.unwrap_or(0);
                    Error::FutureRevision { requested, current }
                } else if matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
                ) || message.contains("transport error")
                {
                    // A connection that broke mid-call (etcd went away) comes back from tonic
                    // as `Unknown: transport error`: etcd is unreachable, not misbehaving.
                    Error::Unavailable(format!("etcd at {}: {message}", self.endpoints))
                } else {
                    Error::Backend(format!("etcd: {message}"))
                }
            }
            etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
                Error::Unavailable(format!("etcd at {}: {e}", self.endpoints))
            }
            _ => Error::Backend(format!("etcd: {e}")),
        }
    }

    /// Runs a guarded transaction whose failure branch reads the key. Returns the success
    /// response, or the key's current value when the guard failed.
    async fn guarded(
        &self,
        key: &str,
        compares: Vec<Compare>,
        then: TxnOp,
    ) -> Result<std::result::Result<(TxnOpResponse, Revision), Option<KeyValue>>> {
        let txn =
            Txn::new().when(compares).and_then(vec![then]).or_else(vec![TxnOp::get(key, None)]);
        let response = match self.kv().txn(txn).await {
            Ok(r) => r,
            Err(e) => return Err(self.error(e, 0).await),
        };
        let revision = response.header().map(|h| h.revision()).unwrap_or(0);
        let mut ops = response.op_responses().into_iter();
        let first = ops.next().ok_or_else(|| Error::Backend("empty etcd txn response".into()))?;
        if response.succeeded() {
            return Ok(Ok((first, revision)));
        }
        match first {
            TxnOpResponse::Get(get) => Ok(Err(get.kvs().first().map(convert))),
            _ => Err(Error::Backend("unexpected etcd txn response".into())),
        }
    }
}

fn convert(kv: &etcd_client::KeyValue) -> KeyValue {
    KeyValue {
        key: String::from_utf8_lossy(kv.key()).into_owned(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
        version: kv.version(),
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Revision {
    header.map(|h| h.revision()).unwrap_or(0)
}

/// The range end etcd wants for "every key under `prefix`" (`\0` = to the end).
fn range_end(prefix: &[u8]) -> Vec<u8> {
    prefix_end(prefix).unwrap_or_else(|| vec![0])
}

#[async_trait]
impl Store for EtcdStore {
    async fn get(
        &self,
        key: &str,
        revision: Option<Revision>,
    ) -> Result<(Option<KeyValue>, Revision)> {
        let options = GetOptions::new().with_revision(revision.unwrap_or(0).max(0));
        let response = match self.kv().get(key, Some(options)).await {
            Ok(r) => r,
            Err(e) => return Err(self.error(e, revision.unwrap_or(0)).await),
        };
        let at = match revision {
            Some(r) if r > 0 => r,
            _ => header_revision(response.header()),
        };
        Ok((response.kvs().first().map(convert), at))
    }

    async fn range(&self, request: RangeRequest<'_>) -> Result<RangeResponse> {
        let prefix = request.prefix.as_bytes();
        let start = match request.continue_from {
            Some(from) if from.as_bytes() > prefix => from.as_bytes(),
            _ => prefix,
        };
        let start = if start.is_empty() { &[0u8][..] } else { start };
        let revision = request.revision.unwrap_or(0).max(0);
        let options = GetOptions::new()
            .with_range(range_end(prefix))
            .with_limit(request.limit.unwrap_or(0) as i64)
            .with_revision(revision);
        let response = match self.kv().get(start, Some(options)).await {
            Ok(r) => r,
            Err(e) => return Err(self.error(e, revision).await),
        };
        let at = if revision > 0 { revision } else { header_revision(response.header()) };
        Ok(RangeResponse {
            kvs: response.kvs().iter().map(convert).collect(),
            more: response.more(),
            count: response.count(),
            revision: at,
        })
    }

    async fn count(&self, prefix: &str) -> Result<(i64, Revision)> {
        let start = if prefix.is_empty() { &[0u8][..] } else { prefix.as_bytes() };
        let options = GetOptions::new().with_range(range_end(prefix.as_bytes())).with_count_only();
        match self.kv().get(start, Some(options)).await {
            Ok(r) => Ok((r.count(), header_revision(r.header()))),
            Err(e) => Err(self.error(e, 0).await),
        }
    }

    async fn current_revision(&self) -> Result<Revision> {
        let options = GetOptions::new().with_count_only();
        match self.kv().get(vec![0u8], Some(options)).await {
            Ok(r) => Ok(header_revision(r.header())),
            Err(e) => Err(self.error(e, 0).await),
        }
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<KeyValue> {
        check_key(key)?;
        check_value(key, &value)?;
        let compare = vec![Compare::create_revision(key, CompareOp::Equal, 0)];
        match self.guarded(key, compare, TxnOp::put(key, value.to_vec(), None)).await? {
            Ok((_, revision)) => Ok(KeyValue {
                key: key.to_string(),
                value,
                create_revision: revision,
                mod_revision: revision,
                version: 1,
            }),
            Err(Some(current)) => Err(Error::AlreadyExists { current }),
            // The key vanished between the failed compare and the read: report the race.
            Err(None) => Err(Error::Conflict { current: None }),
        }
    }

    async fn update(&self, key: &str, value: Bytes, expected: Revision) -> Result<KeyValue> {
        check_key(key)?;
        check_value(key, &value)?;
        let compare = vec![
            Compare::mod_revision(key, CompareOp::Equal, expected),
            Compare::version(key, CompareOp::Greater, 0),
        ];
        let put = TxnOp::put(key, value.to_vec(), Some(PutOptions::new().with_prev_key()));
        match self.guarded(key, compare, put).await? {
            Ok((TxnOpResponse::Put(put), revision)) => {
                let prev = put
                    .prev_key()
                    .ok_or_else(|| Error::Backend("etcd put returned no previous value".into()))?;
                Ok(KeyValue {
                    key: key.to_string(),
                    value,
                    create_revision: prev.create_revision(),
                    mod_revision: revision,
                    version: prev.version() + 1,
                })
            }
            Ok(_) => Err(Error::Backend("unexpected etcd txn response".into())),
            Err(current) => Err(Error::Conflict { current }),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        check_key(key)?;
        let mut compare = vec![Compare::version(key, CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            compare.push(Compare::mod_revision(key, CompareOp::Equal, expected));
        }
        let delete = TxnOp::delete(key, Some(DeleteOptions::new().with_prev_key()));
        match self.guarded(key, compare, delete).await? {
            Ok((TxnOpResponse::Delete(deleted), revision)) => {
                let prev = deleted.prev_kvs().first().map(convert).ok_or_else(|| {
                    Error::Backend("etcd delete returned no previous value".into())
                })?;
                Ok(Deleted { revision, prev })
            }
            Ok(_) => Err(Error::Backend("unexpected etcd txn response".into())),
            Err(None) if expected.is_none() => Err(Error::NotFound { key: key.to_string() }),
            Err(current) => Err(Error::Conflict { current }),
        }
    }

    async fn watch(
        &self,
        key: &str,
        prefix: bool,
        start_revision: Revision,
    ) -> Result<WatchStream> {
        if !prefix {
            check_key(key)?;
        }
        let start = if key.is_empty() { vec![0u8] } else { key.as_bytes().to_vec() };
        // etcd reports a compacted start revision only after the watch is created, and
        // asynchronously; a read at that revision tells at once.
        if start_revision > 0 {
            let options = GetOptions::new().with_revision(start_revision).with_count_only();
            if let Err(e) = self.kv().get(start.clone(), Some(options)).await {
                match self.error(e, start_revision).await {
                    Error::FutureRevision { .. } => {} // watching from the future is fine
                    other => return Err(other),
                }
            }
        }
        let mut options =
            WatchOptions::new().with_prev_key().with_start_revision(start_revision.max(0));
        options = if prefix { options.with_range(range_end(key.as_bytes())) } else { options };
        let mut etcd_stream = match self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE)
            .watch(start, Some(options))
            .await
        {
            Ok(s) => s,
            Err(e) => return Err(self.error(e, start_revision).await),
        };
        // Wait for etcd to confirm the watch, so that a write after this call returns is seen.
        let mut next = start_revision;
        match etcd_stream.message().await {
            Ok(Some(r)) if r.canceled() => {
                return Err(watch_canceled(&r, next));
            }
            Ok(Some(r)) if r.created() => {
                if next <= 0 {
                    next = header_revision(r.header()) + 1;
                }
            }
            Ok(_) => return Err(Error::Backend("etcd watch ended before it was created".into())),
            Err(e) => return Err(self.error(e, start_revision).await),
        }
        let (sender, stream) = WatchStream::channel();
        let store = self.clone();
        tokio::spawn(async move { store.follow(etcd_stream, sender, next).await });
        Ok(stream)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        match self.kv().compact(revision, Some(CompactionOptions::new().with_physical())).await {
            Ok(_) => Ok(()),
            Err(e) => Err(self.error(e, revision).await),
        }
    }
}

fn watch_canceled(response: &etcd_client::WatchResponse, next: Revision) -> Error {
    if response.compact_revision() > 0 {
        Error::Compacted { requested: next, compacted: response.compact_revision() }
    } else {
        Error::Backend(format!("etcd canceled the watch: {}", response.cancel_reason()))
    }
}

impl EtcdStore {
    /// Forwards etcd's watch responses to the consumer until either side ends.
    async fn follow(
        &self,
        mut etcd: etcd_client::WatchStream,
        sender: WatchSender,
        mut next: Revision,
    ) {
        loop {
            tokio::select! {
                message = etcd.message() => {
                    let response = match message {
                        Ok(Some(r)) => r,
                        Ok(None) => {
                            let _ = sender.tx.send(Err(Error::Unavailable("etcd closed the watch".into()))).await;
                            return;
                        }
                        Err(e) => {
                            let _ = sender.tx.send(Err(self.error(e, next).await)).await;
                            return;
                        }
                    };
                    if response.canceled() {
                        let _ = sender.tx.send(Err(watch_canceled(&response, next))).await;
                        return;
                    }
                    let out = if response.events().is_empty() {
                        // A progress notification: everything up to the header's revision is in.
                        WatchResponse { events: Vec::new(), revision: header_revision(response.header()) }
                    } else {
                        let events: Vec<Event> = response.events().iter().filter_map(convert_event).collect();
                        let revision = events.last().map(Event::revision).unwrap_or(next - 1);
                        next = revision + 1;
                        WatchResponse { events, revision }
                    };
                    if sender.tx.send(Ok(out)).await.is_err() {
                        return;
                    }
                }
                _ = sender.progress.notified() => {
                    if let Err(e) = etcd.request_progress().await {
                        let _ = sender.tx.send(Err(self.error(e, next).await)).await;
                        return;
                    }
                }
                _ = sender.tx.closed() => return,
            }
        }
    }
}

fn convert_event(event: &etcd_client::Event) -> Option<Event> {
    let kv = event.kv()?;
    let kind = match event.event_type() {
        EventType::Put => EventKind::Put,
        EventType::Delete => EventKind::Delete,
    };
    Some(Event { kind, kv: convert(kv), prev: event.prev_kv().map(convert) })
}
