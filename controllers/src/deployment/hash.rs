//! The `pod-template-hash`: the label that tells a Deployment's ReplicaSets (and their pods)
//! apart, and the suffix of each ReplicaSet's name.
//!
//! Upstream hashes a Go deep-print of the template, which cannot be reproduced outside Go; we
//! hash the template's JSON instead with the same FNV-32a and the same encoding, so the names
//! look like upstream's (`web-7d4b9c8f6`) and stay the same for the same template.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

/// The label (and selector key) carrying the hash.
pub(super) const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Upstream's "safe" alphabet: no vowels (no words in names) and no characters that look
/// alike (0/o, 1/l, 3/e).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

const FNV32_OFFSET: u32 = 0x811c_9dc5;
const FNV32_PRIME: u32 = 0x0100_0193;

/// FNV-1a, 32 bits, continuing from `hash`.
fn fnv32a(hash: u32, bytes: &[u8]) -> u32 {
    bytes.iter().fold(hash, |h, b| (h ^ u32::from(*b)).wrapping_mul(FNV32_PRIME))
}

/// Maps each byte of `s` into the safe alphabet.
pub(super) fn safe_encode(s: &str) -> String {
    s.bytes().map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()])).collect()
}

/// The hash of a Deployment's template with its `status.collisionCount`: a different count
/// gives a different name when two templates happen to hash alike.
pub(super) fn compute_hash(template: &PodTemplateSpec, collision_count: Option<i32>) -> String {
    // Serializing a k8s-openapi struct cannot fail (no non-string map keys).
    let json = serde_json::to_vec(template).unwrap_or_default();
    let mut hash = fnv32a(FNV32_OFFSET, &json);
    if let Some(count) = collision_count {
        // As upstream: the count as a little-endian uint32 in an 8-byte buffer.
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&(count as u32).to_le_bytes());
        hash = fnv32a(hash, &bytes);
    }
    safe_encode(&hash.to_string())
}

/// Whether two templates are the same apart from the `pod-template-hash` label (a ReplicaSet's
/// template has it, its Deployment's has not). As upstream's semantic equality, an absent
/// list or map equals an empty one.
pub(super) fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    canonical(a) == canonical(b)
}

fn canonical(template: &PodTemplateSpec) -> Value {
    let mut template = template.clone();
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH);
    }
    let mut value = serde_json::to_value(&template).unwrap_or(Value::Null);
    prune(&mut value);
    value
}

/// Drops nulls and empty objects and lists from object members; true when `value` itself is
/// empty.
fn prune(value: &mut Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => {
            map.retain(|_, v| !prune(v));
            map.is_empty()
        }
        Value::Array(items) => {
            items.iter_mut().for_each(|v| {
                prune(v);
            });
            items.is_empty()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::template;
    use super::*;

    #[test]
    fn fnv32a_known_values() {
        assert_eq!(fnv32a(FNV32_OFFSET, b""), 0x811c_9dc5);
        assert_eq!(fnv32a(FNV32_OFFSET, b"a"), 0xe40c_292c);
        assert_eq!(fnv32a(FNV32_OFFSET, b"foobar"), 0xbf9c_f968);
        // Continuing a hash is hashing the concatenation.
        assert_eq!(fnv32a(fnv32a(FNV32_OFFSET, b"foo"), b"bar"), 0xbf9c_f968);
    }

    #[test]
    fn decimal_digits_map_into_the_safe_alphabet_as_upstream() {
        assert_eq!(safe_encode("0123456789"), "456789bcdf");
        assert_eq!(safe_encode(""), "");
        // Any byte lands in the alphabet.
        assert!(safe_encode("az~\u{7f}").bytes().all(|b| ALPHABET.contains(&b)));
    }

    #[test]
    fn hash_is_stable_short_and_depends_on_template_and_collisions() {
        let t = template("nginx:1.0");
        let h = compute_hash(&t, None);
        assert_eq!(h, compute_hash(&t.clone(), None));
        assert!(!h.is_empty() && h.len() <= 10, "{h}");
        assert!(h.bytes().all(|b| ALPHABET.contains(&b)), "{h}");
        assert_ne!(h, compute_hash(&template("nginx:1.1"), None));
        // A collision count, even zero, gives another hash; each count its own.
        let h0 = compute_hash(&t, Some(0));
        let h1 = compute_hash(&t, Some(1));
        assert!(h != h0 && h0 != h1 && h != h1);
        assert_eq!(h1, compute_hash(&t, Some(1)));
    }

    #[test]
    fn templates_compare_without_the_hash_label_and_empty_fields() {
        let d = template("nginx:1.0");
        let mut rs = d.clone();
        rs.metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH.into(), compute_hash(&d, None));
        assert!(equal_ignore_hash(&d, &rs));
        assert!(equal_ignore_hash(&rs, &d));
        // An absent list equals an empty one.
        rs.spec.as_mut().unwrap().volumes = Some(vec![]);
        rs.metadata.as_mut().unwrap().annotations = Some(Default::default());
        assert!(equal_ignore_hash(&d, &rs));
        // Any other difference counts.
        rs.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert("tier".into(), "x".into());
        assert!(!equal_ignore_hash(&d, &rs));
        assert!(!equal_ignore_hash(&d, &template("nginx:1.1")));
        // A template with only the hash label equals one with no labels.
        let mut bare = d.clone();
        bare.metadata.as_mut().unwrap().labels = None;
        let mut hashed = bare.clone();
        hashed.metadata.as_mut().unwrap().labels =
            Some([(POD_TEMPLATE_HASH.into(), "x".into())].into());
        assert!(equal_ignore_hash(&bare, &hashed));
    }
}
