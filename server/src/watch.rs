//! Watch: a chunked stream of `{"type": ..., "object": ...}` lines (or, in the Kubernetes
//! protobuf encoding, of length-prefixed `WatchEvent` frames), one per event, with
//! server-side filtering, bookmarks, resume from a resourceVersion, the initial state for
//! `resourceVersion` unset or `0` (and `sendInitialEvents`), an `ERROR` event with a 410
//! Status when the resourceVersion is too old, and a timeout. Each watcher converts its own
//! events to the version it watches (a custom resource's webhook is called per event, bounded
//! by the webhook's timeout, so a slow webhook holds up only the watches that need it); a
//! conversion that fails ends the watch with an `ERROR` event. Selectors read the cached
//! (stored) objects, except on a version a webhook converts: there they read each event's
//! object and the one before it once converted, as upstream's per-version watch cache does.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rkube_apis::resources::ResourceInfo;
use rkube_store::Revision;
use serde_json::{json, Value};

use crate::cache::{CachedObject, EventType};
use crate::handlers::{Reply, ReplyBody};
use crate::negotiate::{self, Output};
use crate::object;
use crate::registry::{self, Filter, Registry};
use crate::status::{ApiError, ApiResult};
use crate::table::{self, IncludeObject};

/// How many objects of a watch's initial state one conversion takes (for a version a
/// webhook converts and the watch filters once converted).
const CONVERSION_CHUNK: usize = 256;

/// How often a watch that allows bookmarks gets one.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(10);

pub struct WatchRequest {
    pub resource_version: Option<String>,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub timeout: Duration,
    pub output: Output,
    pub include: IncludeObject,
}

/// Starts a watch; the response streams until the timeout, the client leaving, or an error.
pub async fn watch(
    registry: Arc<Registry>,
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    request: WatchRequest,
    filter: Filter,
) -> ApiResult<Reply> {
    let rv = request.resource_version.as_deref().filter(|rv| !rv.is_empty());
    let from: Option<Revision> = match rv {
        None | Some("0") => None,
        Some(rv) => Some(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version {rv:?}")))?,
        ),
    };
    let cache = registry.cache(&info)?;
    // With no resourceVersion the watch starts from the latest state (a consistent read).
    if rv.is_none() {
        cache.wait_fresh(registry.store.as_ref()).await?;
    }
    let prefix = registry.prefix(&info, namespace.as_deref())?;
    // The initial state: for "start at most recent" (unset), "any" (0), or when asked for.
    let initial_wanted = request.send_initial_events.unwrap_or(from.is_none());
    // A resourceVersion ahead of the cache is waited for (3 s at most, as upstream's watch
    // cache), then refused with an ERROR event: never a watch that hangs until its timeout.
    let ahead = match from {
        Some(rv) if rv > cache.current() => cache.wait_for(rv).await.err(),
        _ => None,
    };
    let start = match ahead {
        Some(too_large) => Err(too_large),
        None => cache.watch(if initial_wanted { None } else { from }, &prefix),
    };
    let same_version = (info.group, info.version) == (cache.info().group, cache.info().version);
    // A version a webhook converts is filtered once converted: each event's object (and the
    // one before it, to tell a change into or out of the selection) is converted first.
    let late = registry.filters_converted(&info, &filter)?;
    let encoder = Encoder {
        registry: registry.clone(),
        info,
        output: request.output,
        include: request.include,
        same_version,
    };
    let stream = async_stream::stream! {
        let mut first = true;
        let mut start = match start {
            Ok(s) => s,
            Err(e) => {
                yield encoder.line("ERROR", &e.to_status(), &mut first);
                return;
            }
        };
        let mut seen = start.revision;
        let kind_of = |kind: EventType| match kind { EventType::Added => "ADDED", EventType::Modified => "MODIFIED", EventType::Deleted => "DELETED" };
        if late {
            // One conversion per chunk of the initial state.
            for chunk in start.initial.chunks(CONVERSION_CHUNK) {
                let objects = chunk.iter().map(|e| e.object.value()).collect();
                let converted = match encoder.registry.convert_objects(objects, &encoder.info).await {
                    Ok(converted) => converted,
                    Err(e) => {
                        yield encoder.failed(&e, &mut first);
                        return;
                    }
                };
                for (event, value) in chunk.iter().zip(converted) {
                    if registry::matches(&encoder.info, &filter, &value) {
                        yield encoder.converted(kind_of(event.kind), value, &mut first);
                    }
                }
            }
        }
        for event in start.initial.iter().filter(|_| !late) {
            if filter.matches(&event.object.view()) {
                match encoder.event(kind_of(event.kind), &event.object, &mut first).await {
                    Ok(line) => yield line,
                    Err(e) => {
                        yield encoder.failed(&e, &mut first);
                        return;
                    }
                }
            }
        }
        if request.send_initial_events == Some(true) && request.allow_bookmarks {
            yield encoder.bookmark(seen, true, &mut first);
        }
        let deadline = tokio::time::sleep(request.timeout);
        tokio::pin!(deadline);
        let mut bookmarks = tokio::time::interval_at(tokio::time::Instant::now() + BOOKMARK_INTERVAL, BOOKMARK_INTERVAL);
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                // The resource is no longer served (a custom resource's definition is gone).
                _ = cache.stopped() => return,
                _ = bookmarks.tick(), if request.allow_bookmarks => {
                    // The cache's revision only when every event up to it has been taken off
                    // the channel (events are sent before the revision is published): a
                    // bookmark past an event still queued would make the client skip it.
                    let current = cache.current();
                    let revision = if start.live.is_empty() { current.max(seen) } else { seen };
                    seen = revision;
                    yield encoder.bookmark(revision, false, &mut first);
                }
                event = start.live.recv() => {
                    let event = match event {
                        Ok(e) => e,
                        // Too slow to keep up, or the cache restarted: end, the client resumes.
                        Err(_) => return,
                    };
                    if event.revision <= seen || !event.object.key.starts_with(&prefix) {
                        continue;
                    }
                    seen = event.revision;
                    let (was, now, converted) = if late {
                        let mut objects = vec![event.object.value()];
                        objects.extend(event.prev.as_ref().map(|p| p.value()));
                        let mut converted = match encoder.registry.convert_objects(objects, &encoder.info).await {
                            Ok(converted) => converted.into_iter(),
                            Err(e) => {
                                yield encoder.failed(&e, &mut first);
                                return;
                            }
                        };
                        let (value, prev) = (converted.next(), converted.next());
                        let passes = |v: &Option<Value>| v.as_ref().is_some_and(|v| registry::matches(&encoder.info, &filter, v));
                        (passes(&prev), passes(&value), Some((value, prev)))
                    } else {
                        let was = event.prev.as_ref().is_some_and(|p| filter.matches(&p.view()));
                        (was, filter.matches(&event.object.view()), None)
                    };
                    // An object that stops matching goes out as a DELETED of the object as it
                    // was before the change, at the change's revision, as upstream's watch
                    // cache sends it (its labels still those the watcher selected).
                    let (kind, leaving) = match (event.kind, was, now) {
                        (EventType::Deleted, true, _) => ("DELETED", false),
                        (EventType::Deleted, false, _) => continue,
                        (_, false, true) => ("ADDED", false),
                        (_, true, true) => ("MODIFIED", false),
                        (_, true, false) => ("DELETED", true),
                        (_, false, false) => continue,
                    };
                    if let Some((value, prev)) = converted {
                        let value = match (leaving, prev) {
                            (true, Some(mut prev)) => {
                                object::set_resource_version(&mut prev, event.revision);
                                Some(prev)
                            }
                            (_, _) => value,
                        };
                        if let Some(value) = value {
                            yield encoder.converted(kind, value, &mut first);
                            continue;
                        }
                    }
                    let before = event.prev.as_ref().filter(|_| leaving);
                    let object = match before {
                        Some(prev) => Arc::new(prev.at_revision(cache.info(), event.revision)),
                        None => event.object.clone(),
                    };
                    match encoder.event(kind, &object, &mut first).await {
                        Ok(line) => yield line,
                        Err(e) => {
                            yield encoder.failed(&e, &mut first);
                            return;
                        }
                    }
                }
            }
        }
    };
    let content_type = match request.output {
        Output::Yaml => "application/yaml",
        output if output.is_protobuf() => rkube_apis::protobuf::STREAM_CONTENT_TYPE,
        _ => "application/json",
    };
    Ok(Reply {
        code: http::StatusCode::OK,
        content_type,
        body: ReplyBody::Stream(Box::pin(stream)),
        warnings: Vec::new(),
    })
}

/// Turns events into lines in the requested form.
struct Encoder {
    /// What converts objects to the watched version.
    registry: Arc<Registry>,
    info: Arc<ResourceInfo>,
    output: Output,
    include: IncludeObject,
    /// True when the cache holds objects in the served version: their bytes go out as they are.
    same_version: bool,
}

impl Encoder {
    async fn event(&self, kind: &str, obj: &CachedObject, first: &mut bool) -> ApiResult<Bytes> {
        Ok(match self.output {
            Output::Json if self.same_version && obj.in_storage_version => {
                *first = false;
                Self::raw_line(kind, &obj.json)
            }
            // Metadata is the same in every version: no conversion, no parse of the rest.
            Output::Metadata { protobuf: true, .. } => {
                self.line(kind, &self.output.shape(obj.value()), first)
            }
            Output::Metadata { v1beta1, protobuf: false } => {
                match negotiate::partial_object_metadata_json(&obj.json, v1beta1) {
                    Some(json) => {
                        *first = false;
                        Self::raw_line(kind, &json)
                    }
                    None => self.line(kind, &self.output.shape(obj.value()), first),
                }
            }
            _ => {
                let value = self.registry.convert_object(obj.value(), &self.info).await?;
                self.converted(kind, value, first)
            }
        })
    }

    /// An event of an object already in the watched version.
    fn converted(&self, kind: &str, value: Value, first: &mut bool) -> Bytes {
        match self.output {
            Output::Table { v1beta1 } => {
                let rv = object::resource_version(&value).map(String::from);
                let t = table::table(
                    &self.info,
                    std::slice::from_ref(&value),
                    self.include,
                    v1beta1,
                    *first,
                    rv,
                    None,
                    None,
                );
                self.line(kind, &t, first)
            }
            output => self.line(kind, &output.shape(value), first),
        }
    }

    /// The `ERROR` event ending a watch whose object could not be converted.
    fn failed(&self, e: &ApiError, first: &mut bool) -> Bytes {
        let status = ApiError::internal(e.message.clone()).to_status();
        self.line("ERROR", &status, first)
    }

    fn bookmark(&self, revision: Revision, initial_events_end: bool, first: &mut bool) -> Bytes {
        let mut obj = json!({
            "kind": self.info.kind,
            "apiVersion": self.info.api_version(),
            "metadata": {"resourceVersion": revision.to_string(), "creationTimestamp": null},
        });
        if initial_events_end {
            obj["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        self.line("BOOKMARK", &self.output.shape(obj), first)
    }

    /// An event line around an object's JSON as it is.
    fn raw_line(kind: &str, json: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(json.len() + 32);
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"object\":");
        out.extend_from_slice(json);
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    /// An event in the watch's encoding: a JSON line, or a protobuf frame (an object the
    /// protobuf message cannot hold becomes an `ERROR` event with the reason).
    fn line(&self, kind: &str, obj: &Value, first: &mut bool) -> Bytes {
        *first = false;
        if self.output.is_protobuf() {
            let frame = rkube_apis::protobuf::watch_frame(kind, obj).or_else(|e| {
                let status = ApiError::internal(e.to_string()).to_status();
                rkube_apis::protobuf::watch_frame("ERROR", &status)
            });
            return Bytes::from(frame.unwrap_or_default());
        }
        let mut json = Vec::with_capacity(512);
        rkube_apis::go_json::write(obj, Default::default(), &mut json);
        Self::raw_line(kind, &json)
    }
}
