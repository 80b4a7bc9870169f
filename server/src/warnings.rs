//! `Warning` response headers, bounded as kube-apiserver's warning recorder bounds them: each
//! text once; once the texts would pass 4096 characters in all, every one is cut to 256
//! characters and what no longer fits is left out. A request with 100,000 unknown fields then
//! gets a few kilobytes of warnings, not megabytes of headers no client accepts.
//!
//! Warnings raised deep in a request (admission plugins) reach its answer through the
//! request's [`recording`] scope, as upstream's warning recorder rides the request context:
//! [`add`] records into the scope of the task serving the request; outside one (the server's
//! own writes, tests) it drops them, as upstream does without a recorder.
//!
//! One bound is rkube's own: at most [`MAX_HEADERS`] warnings. Upstream sends as many as fit
//! in the 4096 characters (hundreds of short ones), and a response with more than 100 header
//! lines is one that hyper's HTTP/1 client, and so kube-rs, refuses to read at all.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

tokio::task_local! {
    static RECORDER: Arc<Mutex<Vec<String>>>;
}

/// Runs `request` with a recorder for its warnings: its output, and what [`add`] recorded
/// while it ran, in order.
pub async fn recording<F: Future>(request: F) -> (F::Output, Vec<String>) {
    let recorder = Arc::new(Mutex::new(Vec::new()));
    let output = RECORDER.scope(recorder.clone(), request).await;
    let texts = std::mem::take(&mut *recorder.lock().unwrap_or_else(|e| e.into_inner()));
    (output, texts)
}

/// Records warnings for the answer of the request being served (see [`recording`]).
pub fn add(texts: Vec<String>) {
    if texts.is_empty() {
        return;
    }
    let _ = RECORDER.try_with(|recorder| {
        recorder.lock().unwrap_or_else(|e| e.into_inner()).extend(texts);
    });
}

/// Upstream's limit on the characters of all warning texts together.
pub const TOTAL_CHARS: usize = 4 * 1024;
/// Upstream's limit on one text once the total has been passed.
pub const ITEM_CHARS: usize = 256;
/// At most this many warnings go out (rkube's bound; see the module doc).
pub const MAX_HEADERS: usize = 50;

/// The `Warning` header values (`299 - "text"`) for `texts`, in order, deduplicated and
/// bounded as upstream's recorder bounds them.
pub fn header_values(texts: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut written = 0;
    let mut truncating = false;
    for text in texts {
        if text.is_empty() || !valid(text) {
            continue;
        }
        if truncating && written >= TOTAL_CHARS {
            break;
        }
        if !seen.insert(text.as_str()) {
            continue;
        }
        let chars = text.chars().count();
        if truncating || written + chars <= TOTAL_CHARS {
            kept.push(text);
            written += if truncating { chars.min(ITEM_CHARS) } else { chars };
            continue;
        }
        // Over the total for the first time: from now on every text is cut, those already
        // kept too.
        truncating = true;
        kept.push(text);
        written = kept.iter().map(|t| t.chars().count().min(ITEM_CHARS)).sum();
    }
    kept.into_iter()
        .take(MAX_HEADERS)
        .map(|text| {
            let text = match (truncating, text.char_indices().nth(ITEM_CHARS)) {
                (true, Some((end, _))) => &text[..end],
                _ => text,
            };
            format!("299 - \"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
        })
        .collect()
}

/// Upstream sends only texts of valid characters (no control characters).
fn valid(text: &str) -> bool {
    !text.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(texts: &[&str]) -> Vec<String> {
        header_values(&texts.iter().map(|t| t.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn deduplicated_quoted_and_kept_whole_under_the_total() {
        assert_eq!(
            values(&["a", "say \"hi\"", "a", "", "bad\ntext", "b"]),
            vec![r#"299 - "a""#, r#"299 - "say \"hi\"""#, r#"299 - "b""#]
        );
    }

    #[test]
    fn past_the_total_every_text_is_cut_and_the_rest_left_out() {
        let long = "x".repeat(1000);
        let texts: Vec<String> = (0..10).map(|i| format!("{i}{long}")).collect();
        let got = header_values(&texts);
        // 4 whole texts (4004 chars) fit; the 5th starts truncation: 256 each from then on
        // until the total is reached again (16 x 256 = 4096), but there are only 10.
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|h| h.len() == "299 - \"\"".len() + ITEM_CHARS), "{got:?}");

        let many: Vec<String> = (0..100_000).map(|i| format!("unknown field \"f{i}\"")).collect();
        let got = header_values(&many);
        assert_eq!(got.len(), MAX_HEADERS);
        assert_eq!(got[0], r#"299 - "unknown field \"f0\"""#);
        let total: usize = got.iter().map(String::len).sum();
        assert!(total < 2 * TOTAL_CHARS, "{total}");
    }

    #[tokio::test]
    async fn recorded_within_the_request_and_dropped_outside() {
        add(vec!["lost".into()]);
        let (output, texts) = recording(async {
            add(vec!["a".into()]);
            tokio::task::yield_now().await;
            add(vec!["b".into(), "c".into()]);
            7
        })
        .await;
        assert_eq!((output, texts), (7, vec!["a".to_string(), "b".into(), "c".into()]));
    }

    #[test]
    fn cut_on_a_character_boundary() {
        let mut texts = vec!["é".repeat(TOTAL_CHARS)];
        texts.push("z".into());
        let got = header_values(&texts);
        assert_eq!(got[0], format!("299 - \"{}\"", "é".repeat(ITEM_CHARS)));
        assert_eq!(got[1], r#"299 - "z""#);
    }
}
