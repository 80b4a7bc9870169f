//! Key checks and key-range arithmetic shared by the backends.

use crate::error::{Error, Result};
use crate::types::MAX_VALUE_SIZE;

/// The first key after every key that starts with `prefix` (etcd's "range end" for a prefix):
/// the prefix with its last byte below 0xff incremented and what follows dropped. `None` when
/// there is no such key (an empty prefix, or all 0xff), meaning "to the end of the keyspace".
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Rejects keys no backend can store.
pub(crate) fn check_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::InvalidKey { key: key.to_string(), reason: "a key must not be empty" });
    }
    if key.contains('\0') {
        return Err(Error::InvalidKey {
            key: key.to_string(),
            reason: "a key must not contain NUL",
        });
    }
    Ok(())
}

/// Rejects a value over the size limit.
pub(crate) fn check_value(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_SIZE {
        return Err(Error::ValueTooLarge {
            key: key.to_string(),
            size: value.len(),
            limit: MAX_VALUE_SIZE,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_last_byte() {
        assert_eq!(prefix_end(b"/registry/pods/"), Some(b"/registry/pods0".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    #[test]
    fn bad_keys_and_values_are_rejected() {
        assert!(matches!(check_key(""), Err(Error::InvalidKey { .. })));
        assert!(matches!(check_key("a\0b"), Err(Error::InvalidKey { .. })));
        assert!(check_key("/registry/pods/default/a").is_ok());
        assert!(check_value("k", &vec![0; MAX_VALUE_SIZE]).is_ok());
        assert!(matches!(
            check_value("k", &vec![0; MAX_VALUE_SIZE + 1]),
            Err(Error::ValueTooLarge { .. })
        ));
    }
}
