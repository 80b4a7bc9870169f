//! Completion indexes of Indexed Jobs: the interval lists the Job's status and success policy
//! write them in (`"0-2,4,6,7"`), and the per-pod annotations that carry them.

use std::collections::BTreeMap;
use std::fmt;

/// The annotation (and label) holding a pod's completion index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// The annotation counting the earlier failures of a pod's index that counted towards
/// `backoffLimitPerIndex`.
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation counting the earlier failures of a pod's index that a pod failure policy
/// ignored.
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// The environment variable every container of an indexed pod reads its index from.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The longest `generateName` the API server keeps whole (63 minus the 5 random characters).
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// A set of indexes as sorted, disjoint, non-adjacent closed intervals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(i32, i32)>);

impl Intervals {
    /// Reads an interval list as the status writes it, keeping only indexes below
    /// `completions`. Malformed pieces are skipped, as upstream does, so that one bad entry
    /// written by someone else does not lose the rest.
    pub fn parse(text: &str, completions: i32) -> Intervals {
        let mut out: Vec<(i32, i32)> = Vec::new();
        if text.is_empty() {
            return Intervals(out);
        }
        for piece in text.split(',') {
            let mut limits = piece.split('-');
            let Some(Ok(first)) = limits.next().map(str::parse::<i32>) else { continue };
            if first >= completions {
                break;
            }
            let last = match limits.next() {
                None => first,
                Some(text) => match text.parse::<i32>() {
                    Ok(last) => last.min(completions - 1),
                    Err(_) => continue,
                },
            };
            match out.last_mut() {
                Some(previous) if previous.1.checked_add(1) == Some(first) => previous.1 = last,
                _ => out.push((first, last)),
            }
        }
        Intervals(out)
    }

    /// These intervals with `indexes` (in increasing order) added.
    pub fn with_indexes(&self, indexes: &[i32]) -> Intervals {
        self.merge(&Intervals(indexes.iter().map(|&i| (i, i)).collect()))
    }

    /// The union of two interval lists.
    pub fn merge(&self, other: &Intervals) -> Intervals {
        let mut all: Vec<(i32, i32)> = self.0.iter().chain(other.0.iter()).copied().collect();
        all.sort_unstable();
        let mut out: Vec<(i32, i32)> = Vec::with_capacity(all.len());
        for (first, last) in all {
            match out.last_mut() {
                Some(previous) if i64::from(first) <= i64::from(previous.1) + 1 => {
                    previous.1 = previous.1.max(last);
                }
                _ => out.push((first, last)),
            }
        }
        Intervals(out)
    }

    /// How many indexes there are.
    pub fn total(&self) -> i32 {
        let sum: i64 = self.0.iter().map(|(f, l)| i64::from(*l) - i64::from(*f) + 1).sum();
        i32::try_from(sum).unwrap_or(i32::MAX)
    }

    pub fn has(&self, index: i32) -> bool {
        let at = self.0.partition_point(|(_, last)| *last < index);
        self.0.get(at).is_some_and(|(first, _)| *first <= index)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The intervals, lowest first.
    pub fn intervals(&self) -> &[(i32, i32)] {
        &self.0
    }

    /// How many indexes of `self` are also in `other`.
    pub fn overlap(&self, other: &Intervals) -> i32 {
        let (mut a, mut b, mut count) = (0, 0, 0i64);
        while a < self.0.len() && b < other.0.len() {
            let (x, y) = (self.0[a], other.0[b]);
            let shared = i64::from(x.1.min(y.1)) - i64::from(x.0.max(y.0)) + 1;
            count += shared.max(0);
            if x.1 < y.1 {
                a += 1;
            } else {
                b += 1;
            }
        }
        i32::try_from(count).unwrap_or(i32::MAX)
    }
}

/// As the status writes it: `0-2,4`; two neighbours are written `5,6`, not `5-6`.
impl fmt::Display for Intervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (first, last)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last > first {
                let sep = if *last == first + 1 { "," } else { "-" };
                write!(f, "{sep}{last}")?;
            }
        }
        Ok(())
    }
}

/// The first `count` indexes below `completions` that are not in `taken`.
pub fn first_pending(count: usize, completions: i32, taken: &Intervals) -> Vec<i32> {
    let mut out = Vec::with_capacity(count.min(1024));
    let mut candidate = 0;
    for (first, last) in taken.intervals() {
        while candidate < completions && out.len() < count && candidate < *first {
            out.push(candidate);
            candidate += 1;
        }
        if candidate <= *last {
            candidate = last.saturating_add(1);
        }
    }
    while candidate < completions && out.len() < count {
        out.push(candidate);
        candidate += 1;
    }
    out
}

/// A pod's completion index from its annotations; none when missing, malformed or negative.
pub fn completion_index(annotations: Option<&BTreeMap<String, String>>) -> Option<i32> {
    annotations?.get(COMPLETION_INDEX)?.parse::<i32>().ok().filter(|i| *i >= 0)
}

/// A counter annotation (`job-index-failure-count` and the like); 0 when missing or bad, as
/// upstream reads them (a user may have written anything there).
pub fn count_annotation(annotations: Option<&BTreeMap<String, String>>, key: &str) -> i32 {
    annotations
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|v| i32::try_from(v).ok())
        .filter(|v| *v >= 0)
        .unwrap_or(0)
}

/// `generateName` of an indexed pod: `<job>-<index>-`, the job name shortened when the whole
/// would be cut by the API server (the index must survive).
pub fn generate_name_with_index(job: &str, index: i32) -> String {
    let suffix = format!("-{index}-");
    let whole = format!("{job}{suffix}");
    if whole.len() <= MAX_GENERATED_NAME_LENGTH {
        return whole;
    }
    let mut keep = MAX_GENERATED_NAME_LENGTH.saturating_sub(suffix.len());
    while keep > 0 && !job.is_char_boundary(keep) {
        keep -= 1;
    }
    format!("{}{suffix}", &job[..keep])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(text: &str) -> Intervals {
        Intervals::parse(text, 100)
    }

    #[test]
    fn interval_lists_read_and_write_as_upstream() {
        assert_eq!(iv("").to_string(), "");
        assert_eq!(iv("0-2,4").to_string(), "0-2,4");
        assert_eq!(iv("1,2").to_string(), "1,2");
        assert_eq!(iv("1,2,3").to_string(), "1-3");
        assert_eq!(iv("0-2,3-5,7").to_string(), "0-5,7");
        // Corrupt pieces are skipped, indexes past completions dropped or clamped.
        assert_eq!(iv("x,3,4-y,6").to_string(), "3,6");
        assert_eq!(Intervals::parse("1,3-9,12", 6).to_string(), "1,3-5");
        assert_eq!(Intervals::parse("7,8", 6).to_string(), "");
        assert_eq!(iv("0-2,4").total(), 4);
        assert!(iv("0-2,4").has(0) && iv("0-2,4").has(2) && iv("0-2,4").has(4));
        assert!(!iv("0-2,4").has(3) && !iv("0-2,4").has(5) && !iv("").has(0));
    }

    #[test]
    fn intervals_merge_and_grow() {
        assert_eq!(iv("0,4").with_indexes(&[1, 2, 3, 9]).to_string(), "0-4,9");
        assert_eq!(iv("0-3").with_indexes(&[2]).to_string(), "0-3");
        assert_eq!(iv("0-3,8").merge(&iv("2-5,7,10")).to_string(), "0-5,7,8,10");
        assert_eq!(iv("0-3,8").overlap(&iv("2-5,7,8")), 3);
        assert_eq!(iv("").overlap(&iv("1")), 0);
    }

    #[test]
    fn pending_indexes_fill_the_gaps() {
        assert_eq!(first_pending(3, 5, &iv("")), [0, 1, 2]);
        assert_eq!(first_pending(3, 6, &iv("0,2-3")), [1, 4, 5]);
        assert_eq!(first_pending(5, 6, &iv("0-5")), Vec::<i32>::new());
        assert_eq!(first_pending(0, 6, &iv("")), Vec::<i32>::new());
        assert_eq!(first_pending(9, 4, &iv("1")), [0, 2, 3]);
    }

    #[test]
    fn index_annotations_and_names() {
        let mut a = BTreeMap::new();
        assert_eq!(completion_index(None), None);
        assert_eq!(completion_index(Some(&a)), None);
        a.insert(COMPLETION_INDEX.to_string(), "3".to_string());
        assert_eq!(completion_index(Some(&a)), Some(3));
        a.insert(COMPLETION_INDEX.to_string(), "-1".to_string());
        assert_eq!(completion_index(Some(&a)), None);
        a.insert(INDEX_FAILURE_COUNT.to_string(), "2".to_string());
        assert_eq!(count_annotation(Some(&a), INDEX_FAILURE_COUNT), 2);
        a.insert(INDEX_FAILURE_COUNT.to_string(), "lots".to_string());
        assert_eq!(count_annotation(Some(&a), INDEX_FAILURE_COUNT), 0);
        assert_eq!(generate_name_with_index("pi", 3), "pi-3-");
        let long = "j".repeat(60);
        let name = generate_name_with_index(&long, 12);
        assert_eq!(name.len(), 58);
        assert!(name.ends_with("j-12-"));
    }
}
