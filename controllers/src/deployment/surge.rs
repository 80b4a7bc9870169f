//! How far a rolling update may go beyond and below the Deployment's size: `maxSurge` and
//! `maxUnavailable`, each a number or a percentage of `spec.replicas` (a surge rounds up, an
//! unavailability rounds down, so a rollout always moves).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::replica_sets::deployment_replicas;

pub(super) const RECREATE: &str = "Recreate";
pub(super) const ROLLING_UPDATE: &str = "RollingUpdate";

/// The strategy type; the API's default when absent.
pub(super) fn strategy_type(d: &Deployment) -> &str {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(ROLLING_UPDATE)
}

pub(super) fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == ROLLING_UPDATE
}

/// `maxSurge` and `maxUnavailable`, with the API's defaults (25% each) where absent.
fn rolling_parameters(d: &Deployment) -> (IntOrString, IntOrString) {
    let rolling =
        d.spec.as_ref().and_then(|s| s.strategy.as_ref()).and_then(|s| s.rolling_update.as_ref());
    let default = || IntOrString::String("25%".into());
    (
        rolling.and_then(|r| r.max_surge.clone()).unwrap_or_else(default),
        rolling.and_then(|r| r.max_unavailable.clone()).unwrap_or_else(default),
    )
}

/// A number as is, or a percentage of `total`, rounded up or down.
pub(crate) fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> Result<i32, String> {
    match value {
        IntOrString::Int(n) => Ok(*n),
        IntOrString::String(s) => {
            let percent =
                s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()).ok_or_else(|| {
                    format!("invalid value {s:?}: must be an integer or a percentage")
                })?;
            let exact = percent as f64 * f64::from(total) / 100.0;
            let scaled = if round_up { exact.ceil() } else { exact.floor() };
            Ok(scaled.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32)
        }
    }
}

/// `maxSurge` and `maxUnavailable` for `desired` replicas. Both resolving to zero (possible
/// when small percentages round down) would stop a rollout, so unavailability becomes 1.
pub(super) fn resolve_fenceposts(
    max_surge: &IntOrString,
    max_unavailable: &IntOrString,
    desired: i32,
) -> Result<(i32, i32), String> {
    let surge = scaled_value(max_surge, desired, true)?;
    let unavailable = scaled_value(max_unavailable, desired, false)?;
    Ok(if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) })
}

/// The extra pods a rolling update may run; 0 for Recreate.
pub(super) fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling_update(d) {
        return 0;
    }
    let (surge, unavailable) = rolling_parameters(d);
    resolve_fenceposts(&surge, &unavailable, deployment_replicas(d)).map_or(0, |(s, _)| s)
}

/// The pods a rolling update may have unavailable (never more than the Deployment's size);
/// 0 for Recreate.
pub(super) fn max_unavailable(d: &Deployment) -> i32 {
    let replicas = deployment_replicas(d);
    if !is_rolling_update(d) || replicas == 0 {
        return 0;
    }
    let (surge, unavailable) = rolling_parameters(d);
    resolve_fenceposts(&surge, &unavailable, replicas).map_or(0, |(_, u)| u.min(replicas))
}

/// `maxSurge` alone, as the new ReplicaSet's scale-up uses it (without the both-zero rule).
pub(super) fn surge_only(d: &Deployment) -> Result<i32, String> {
    scaled_value(&rolling_parameters(d).0, deployment_replicas(d), true)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{deployment, rolling};
    use super::*;

    fn int(n: i32) -> IntOrString {
        IntOrString::Int(n)
    }

    fn pct(s: &str) -> IntOrString {
        IntOrString::String(s.into())
    }

    #[test]
    fn numbers_and_percentages_scale_with_rounding() {
        assert_eq!(scaled_value(&int(3), 10, true), Ok(3));
        assert_eq!(scaled_value(&pct("25%"), 10, true), Ok(3));
        assert_eq!(scaled_value(&pct("25%"), 10, false), Ok(2));
        assert_eq!(scaled_value(&pct("25%"), 4, false), Ok(1));
        assert_eq!(scaled_value(&pct("25%"), 1, true), Ok(1));
        assert_eq!(scaled_value(&pct("25%"), 1, false), Ok(0));
        assert_eq!(scaled_value(&pct("0%"), 5, true), Ok(0));
        assert_eq!(scaled_value(&pct("100%"), 7, false), Ok(7));
        assert!(scaled_value(&pct("25"), 4, true).is_err());
        assert!(scaled_value(&pct("x%"), 4, true).is_err());
    }

    #[test]
    fn fenceposts_as_upstream() {
        // (surge, unavailable, desired) -> (surge, unavailable)
        let cases = [
            (pct("25%"), pct("25%"), 10, (3, 2)),
            (pct("25%"), pct("25%"), 1, (1, 0)),
            (int(0), pct("25%"), 1, (0, 1)), // both zero: one may be unavailable
            (int(0), int(0), 5, (0, 1)),
            (pct("10%"), pct("10%"), 5, (1, 0)),
            (int(2), int(3), 0, (2, 3)),
            (pct("50%"), int(1), 3, (2, 1)),
        ];
        for (surge, unavailable, desired, expected) in cases {
            assert_eq!(
                resolve_fenceposts(&surge, &unavailable, desired),
                Ok(expected),
                "{surge:?} {unavailable:?} of {desired}"
            );
        }
    }

    #[test]
    fn deployment_surge_and_unavailability() {
        let d = deployment(10);
        assert_eq!((max_surge(&d), max_unavailable(&d)), (3, 2));
        let d = rolling(deployment(2), int(0), int(5));
        assert_eq!((max_surge(&d), max_unavailable(&d)), (0, 2)); // capped at the size
        let d = rolling(deployment(0), int(1), int(1));
        assert_eq!((max_surge(&d), max_unavailable(&d)), (1, 0));
        let d = rolling(deployment(4), int(0), int(0));
        assert_eq!((max_surge(&d), max_unavailable(&d), surge_only(&d)), (0, 1, Ok(0)));
        let mut d = deployment(4);
        d.spec.as_mut().unwrap().strategy.as_mut().unwrap().type_ = Some(RECREATE.into());
        assert_eq!((max_surge(&d), max_unavailable(&d)), (0, 0));
        assert!(!is_rolling_update(&d));
        // No strategy at all: the API's defaults.
        let mut d = deployment(4);
        d.spec.as_mut().unwrap().strategy = None;
        assert_eq!((max_surge(&d), max_unavailable(&d)), (1, 1));
    }
}
