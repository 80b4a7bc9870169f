//! Whether a served connection is idle: requests in progress are counted from the moment
//! hyper hands them to the service until their response body is dropped (sent or abandoned),
//! so a watch streaming for an hour is not idle, and the connection's watchdog
//! ([`Activity::idle_for`]) knows when the last one ended.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// The requests in progress on one connection, and since when it has had none.
#[derive(Clone)]
pub(crate) struct Activity(Arc<State>);

struct State {
    active: AtomicUsize,
    /// When the last request ended; `None` until the first one began.
    idle_since: Mutex<Option<Instant>>,
    opened: Instant,
}

impl Activity {
    pub(crate) fn new() -> Activity {
        Activity(Arc::new(State {
            active: AtomicUsize::new(0),
            idle_since: Mutex::new(None),
            opened: Instant::now(),
        }))
    }

    fn begin(&self) -> InProgress {
        self.0.active.fetch_add(1, Ordering::SeqCst);
        let mut idle = self.0.idle_since.lock().expect("idle_since");
        idle.get_or_insert(self.0.opened);
        InProgress(self.clone())
    }

    /// Resolves once the connection has had no request in progress for `idle` (or, before
    /// its first request, for `first`).
    pub(crate) async fn idle_for(&self, first: Duration, idle: Duration) {
        loop {
            let deadline = match *self.0.idle_since.lock().expect("idle_since") {
                None => self.0.opened + first,
                Some(_) if self.0.active.load(Ordering::SeqCst) > 0 => Instant::now() + idle,
                Some(since) => since + idle,
            };
            if deadline <= Instant::now() {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// One request in progress; ends when dropped.
struct InProgress(Activity);

impl Drop for InProgress {
    fn drop(&mut self) {
        let state = &self.0 .0;
        let mut idle = state.idle_since.lock().expect("idle_since");
        if state.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            *idle = Some(Instant::now());
        }
    }
}

/// A hyper service whose requests count in an [`Activity`] until their response body ends.
pub(crate) struct Tracked<S> {
    inner: S,
    activity: Activity,
}

impl<S> Tracked<S> {
    pub(crate) fn new(inner: S, activity: Activity) -> Tracked<S> {
        Tracked { inner, activity }
    }
}

impl<S, R, B> hyper::service::Service<R> for Tracked<S>
where
    S: hyper::service::Service<R, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<TrackedBody<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn call(&self, request: R) -> Self::Future {
        let in_progress = self.activity.begin();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| TrackedBody { body: Box::pin(body), _in_progress: in_progress }))
        })
    }
}

/// A response body that keeps its request counted as in progress while it lives.
pub(crate) struct TrackedBody<B> {
    body: Pin<Box<B>>,
    _in_progress: InProgress,
}

impl<B: hyper::body::Body> hyper::body::Body for TrackedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<B::Data>, B::Error>>> {
        self.body.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_counts_from_the_last_request() {
        let activity = Activity::new();
        let (first, idle) = (Duration::from_secs(5), Duration::from_secs(60));
        // No request at all: the first deadline.
        let started = Instant::now();
        activity.idle_for(first, idle).await;
        assert_eq!(started.elapsed(), first);
        // A request in progress keeps it busy however long it takes.
        let request = activity.begin();
        let waiting = tokio::spawn({
            let activity = activity.clone();
            async move { activity.idle_for(first, idle).await }
        });
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(!waiting.is_finished());
        let ended = Instant::now();
        drop(request);
        waiting.await.unwrap();
        assert_eq!(ended.elapsed(), idle);
    }
}
