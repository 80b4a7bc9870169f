//! [`WatchStream`]: the one watch handle every backend returns.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, Notify};

use crate::error::Result;
use crate::types::WatchResponse;
use std::sync::Arc;

/// How many responses a watch buffers for a consumer that is not reading. A backend's watch
/// task waits (and, for SQLite, later catches up from the log) when the buffer is full.
pub(crate) const WATCH_BUFFER: usize = 256;

/// The receiving end of a watch: responses in revision order, ending with `Err` when the
/// watch cannot go on ([`Error::Compacted`](crate::Error::Compacted), or the backend failed).
///
/// Dropping it cancels the watch. It is a [`futures_core::Stream`] too.
pub struct WatchStream {
    rx: mpsc::Receiver<Result<WatchResponse>>,
    progress: Arc<Notify>,
}

impl WatchStream {
    /// A stream fed by a backend's watch task. The task sends responses into `tx`, answers
    /// `progress` notifications, and stops when `tx` is closed.
    pub(crate) fn channel() -> (WatchSender, WatchStream) {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let progress = Arc::new(Notify::new());
        (WatchSender { tx, progress: progress.clone() }, WatchStream { rx, progress })
    }

    /// The next response; `None` once the watch has ended.
    pub async fn recv(&mut self) -> Option<Result<WatchResponse>> {
        self.rx.recv().await
    }

    /// Asks for a progress notification: soon, a response with no events whose revision says
    /// every event up to it has been delivered.
    pub fn request_progress(&self) {
        self.progress.notify_one();
    }
}

impl futures_core::Stream for WatchStream {
    type Item = Result<WatchResponse>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

/// The backend's end of a [`WatchStream`].
pub(crate) struct WatchSender {
    pub(crate) tx: mpsc::Sender<Result<WatchResponse>>,
    pub(crate) progress: Arc<Notify>,
}
