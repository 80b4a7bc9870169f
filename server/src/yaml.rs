//! YAML request bodies (`application/yaml` objects, `application/apply-patch+yaml`) read
//! into JSON values, refusing documents nested deeper than serde_yaml_ng's limit (128) before
//! its parser sees them: it refuses them too, but only after a parse whose time grows with
//! the square of the depth (a 200 KB body of nested `[` kept a core busy for minutes).

/// serde_yaml_ng's recursion limit.
pub const MAX_DEPTH: usize = 128;

/// Why a YAML body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    /// Nested deeper than [`MAX_DEPTH`] (serde_yaml_ng's own words for it).
    #[error("recursion limit exceeded")]
    TooDeep,
    #[error(transparent)]
    Invalid(#[from] serde_yaml_ng::Error),
}

/// `body` as a JSON value.
pub fn decode(body: &[u8]) -> Result<serde_json::Value, YamlError> {
    if deeper_than(body, MAX_DEPTH) {
        return Err(YamlError::TooDeep);
    }
    Ok(serde_yaml_ng::from_slice(body)?)
}

/// Whether the document's flow collections (`[`, `{`) and the block sequences or keys
/// opened on one line (`- - - x`) nest deeper than `max`: a lexical scan that skips quoted
/// scalars and comments. Nesting by indentation is not counted (a 3 MiB body cannot indent
/// deep enough to matter).
fn deeper_than(body: &[u8], max: usize) -> bool {
    let mut flow = 0usize;
    let mut block = 0usize;
    let mut line_start = true;
    let mut after_separator = true;
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        let next_is_space = body.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
        match c {
            b'\n' => {
                (line_start, after_separator, block) = (true, true, 0);
            }
            b' ' | b'\t' | b'\r' => after_separator = true,
            b'#' if after_separator => {
                while i < body.len() && body[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' if after_separator => {
                i += 1;
                while i < body.len() {
                    match body[i] {
                        b'\\' if c == b'"' => i += 1,
                        b'\'' if c == b'\'' && body.get(i + 1) == Some(&b'\'') => i += 1,
                        q if q == c => break,
                        _ => {}
                    }
                    i += 1;
                }
                (line_start, after_separator) = (false, false);
            }
            b'[' | b'{' if after_separator => {
                flow += 1;
                if flow + block > max {
                    return true;
                }
                line_start = false;
            }
            b']' | b'}' if flow > 0 => {
                flow -= 1;
                after_separator = true;
            }
            b',' if flow > 0 => after_separator = true,
            b'-' | b'?' if line_start && flow == 0 && next_is_space => {
                block += 1;
                if flow + block > max {
                    return true;
                }
            }
            _ => (line_start, after_separator) = (false, false),
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_documents_are_refused_before_parsing() {
        let deep = |open: &str, close: &str, n: usize| {
            format!("a: {}1{}\n", open.repeat(n), close.repeat(n))
        };
        assert!(matches!(decode(deep("[", "]", 100_000).as_bytes()), Err(YamlError::TooDeep)));
        assert!(matches!(decode(deep("{a: ", "}", 200).as_bytes()), Err(YamlError::TooDeep)));
        let dashes = format!("{}x\n", "- ".repeat(200));
        assert!(matches!(decode(dashes.as_bytes()), Err(YamlError::TooDeep)));
        // Within the limit, as serde_yaml_ng reads it.
        let ok = deep("[", "]", 100);
        assert_eq!(
            decode(ok.as_bytes()).unwrap(),
            serde_yaml_ng::from_str::<serde_json::Value>(&ok).unwrap()
        );
    }

    #[test]
    fn brackets_in_scalars_and_comments_do_not_count() {
        let many = "[".repeat(300);
        let doc = format!(
            "a: \"{many}\"\nb: '{many}'\nc: x{many}\n# {many}\nd: [1, [2, {{e: f}}]]\n- - - x\n"
        );
        assert!(!deeper_than(doc.as_bytes(), MAX_DEPTH));
    }
}
