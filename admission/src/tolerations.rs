//! Merging two lists of pod tolerations as upstream does (`tolerations.MergeTolerations`):
//! a toleration that another one already covers is dropped, so a pod given tolerations by
//! admission (RuntimeClass) does not carry redundant ones.

use serde_json::Value;

/// A toleration's fields as Go holds them: an absent string is empty.
#[derive(PartialEq, Eq)]
struct Toleration<'a> {
    key: &'a str,
    operator: &'a str,
    value: &'a str,
    effect: &'a str,
    seconds: Option<i64>,
}

impl<'a> Toleration<'a> {
    fn of(v: &'a Value) -> Toleration<'a> {
        let text = |field: &str| v[field].as_str().unwrap_or("");
        Toleration {
            key: text("key"),
            operator: text("operator"),
            value: text("value"),
            effect: text("effect"),
            seconds: v["tolerationSeconds"].as_i64(),
        }
    }

    /// Whether `self` tolerates everything `t` does (upstream's `isSuperset`).
    fn covers(&self, t: &Toleration<'_>) -> bool {
        if self == t {
            return true;
        }
        // An empty key with Exists matches every key.
        if t.key != self.key && (!self.key.is_empty() || self.operator != "Exists") {
            return false;
        }
        // An empty effect matches every effect.
        if t.effect != self.effect && !self.effect.is_empty() {
            return false;
        }
        if self.effect == "NoExecute" {
            if let Some(limit) = self.seconds {
                if t.seconds.is_none_or(|s| s > limit) {
                    return false;
                }
            }
        }
        match self.operator {
            "" | "Equal" => t.operator == "Equal" && t.value == self.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// `first` then `second`, without the tolerations another one covers (of equal ones, the
/// first is kept).
pub fn merge(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let mut merged: Vec<&Value> = Vec::new();
    for (i, candidate) in all.iter().enumerate() {
        let t = Toleration::of(candidate);
        if merged.iter().any(|m| Toleration::of(m).covers(&t)) {
            continue;
        }
        let covered_later = all[i + 1..]
            .iter()
            .map(|later| Toleration::of(later))
            .any(|later| later != t && later.covers(&t));
        if !covered_later {
            merged.push(candidate);
        }
    }
    merged.into_iter().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owned(list: &[&Value]) -> Vec<Value> {
        list.iter().map(|v| (*v).clone()).collect()
    }

    /// `merge` of lists given by reference.
    fn m(first: &[&Value], second: &[&Value]) -> Vec<Value> {
        merge(&owned(first), &owned(second))
    }

    #[test]
    fn covered_tolerations_are_dropped_as_upstream() {
        let gpu = json!({"key": "gpu", "operator": "Equal", "value": "a", "effect": "NoSchedule"});
        let any_gpu = json!({"key": "gpu", "operator": "Exists"});
        let everything = json!({"operator": "Exists"});
        let other = json!({"key": "zone", "operator": "Equal", "value": "b"});
        assert_eq!(m(&[&gpu], &[&any_gpu]), owned(&[&any_gpu]));
        assert_eq!(m(&[&any_gpu, &other], &[&gpu]), owned(&[&any_gpu, &other]));
        assert_eq!(m(&[&gpu, &other], &[&everything]), owned(&[&everything]));
        // Equal ones: the first is kept.
        assert_eq!(m(&[&gpu], &[&gpu]), owned(&[&gpu]));
        // An empty operator means Equal; it covers an explicit Equal, but is not covered by
        // one (upstream compares the operator as written).
        let implicit = json!({"key": "gpu", "value": "a", "effect": "NoSchedule"});
        assert_eq!(m(&[&implicit], &[&gpu]), owned(&[&implicit]));
        assert_eq!(m(&[&gpu], &[&implicit]), owned(&[&implicit]));
        assert!(!Toleration::of(&gpu).covers(&Toleration::of(&implicit)));
        // A NoExecute toleration with a time limit covers only shorter ones.
        let short = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30});
        let long = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        assert_eq!(m(&[&short], &[&long]), owned(&[&long]));
        assert_eq!(m(&[&long], &[&short]), owned(&[&long]));
        assert!(merge(&[], &[]).is_empty());
    }
}
