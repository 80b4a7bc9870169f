//! Generated object names, as upstream's `SimpleNameGenerator`: the one mechanism behind
//! `metadata.generateName` (the registry) and the names admission plugins give what they add
//! (the ServiceAccount plugin's `kube-api-access-<rand>` volume).

/// Upstream's alphabet for generated suffixes: no vowels (no words), no look-alikes.
pub const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// How many random characters a generated name ends with.
pub const RANDOM_LENGTH: usize = 5;

/// The longest generated name: upstream trims the prefix to keep within it.
const MAX_NAME_LENGTH: usize = 63;

/// `prefix` and five random characters from [`ALPHABET`], the prefix trimmed so the name
/// stays within 63 characters.
pub fn generate_name(prefix: &str) -> String {
    use rand::RngExt;
    let mut rng = rand::rng();
    let suffix: String =
        (0..RANDOM_LENGTH).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect();
    let max_prefix = MAX_NAME_LENGTH - RANDOM_LENGTH;
    let prefix = if prefix.len() > max_prefix { &prefix[..max_prefix] } else { prefix };
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_keep_the_prefix_and_use_the_alphabet() {
        let n = generate_name("web-");
        assert!(n.starts_with("web-") && n.len() == 9, "{n}");
        assert!(n[4..].bytes().all(|c| ALPHABET.contains(&c)), "{n}");
        assert_eq!(generate_name(&"x".repeat(80)).len(), 63);
    }
}
