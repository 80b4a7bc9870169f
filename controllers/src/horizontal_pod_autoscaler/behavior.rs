//! From the count the metrics ask for to the count the target is given, as upstream's HPA
//! normalizes it: the stabilization windows (the highest recent recommendation wins a
//! scale-down, the lowest a scale-up), the bounds (`minReplicas`, `maxReplicas`) and the
//! rate limits, and which conditions say so.
//!
//! Two regimes, as upstream:
//! - No `spec.behavior`: a scale-down waits out `--horizontal-pod-autoscaler-downscale-stabilization`
//!   (the highest recommendation of that window wins) and a scale-up goes at most to
//!   `max(2 * current, 4)`.
//! - With `spec.behavior` (completed with the API's defaults: up by 4 pods or 100% per 15 s,
//!   the larger; down by 100% per 15 s, the flag's window when none is given): each
//!   direction's stabilization window, then its policies over the changes this controller made
//!   within each policy's period (`selectPolicy` Max, Min or Disabled).
//!
//! Everything here is a pure function of a [`History`] (the recommendations and scale events
//! this controller recorded for one HPA) and the time, which the caller passes in.

use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v2::{HPAScalingRules, HorizontalPodAutoscalerBehavior};

/// How a direction's policies combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    /// The policy allowing the largest change.
    Max,
    /// The policy allowing the smallest change.
    Min,
    /// No change in this direction.
    Disabled,
}

/// What one policy limits: a number of pods, or a percentage of the count at the start of
/// its period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Pods(i32),
    Percent(i32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub limit: Limit,
    pub period_seconds: i32,
}

/// One direction's rules, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub stabilization_window_seconds: i32,
    pub select: Select,
    pub policies: Vec<Policy>,
}

/// Both directions' rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behavior {
    pub up: Rules,
    pub down: Rules,
}

impl Rules {
    /// The API's default for scaling up: 4 pods or 100% per 15 s, whichever is more, at once.
    pub fn default_up() -> Rules {
        Rules {
            stabilization_window_seconds: 0,
            select: Select::Max,
            policies: vec![
                Policy { limit: Limit::Pods(4), period_seconds: 15 },
                Policy { limit: Limit::Percent(100), period_seconds: 15 },
            ],
        }
    }

    /// The API's default for scaling down: 100% per 15 s after `window` seconds of
    /// stabilization.
    pub fn default_down(window: i32) -> Rules {
        Rules {
            stabilization_window_seconds: window,
            select: Select::Max,
            policies: vec![Policy { limit: Limit::Percent(100), period_seconds: 15 }],
        }
    }

    /// `given`'s rules, each field it lacks taken from `defaults`. (`tolerance` is ignored:
    /// HPAConfigurableTolerance is off in v1.33.)
    fn from_spec(given: Option<&HPAScalingRules>, defaults: Rules) -> Rules {
        let Some(given) = given else { return defaults };
        let select = match given.select_policy.as_deref() {
            Some("Min") => Select::Min,
            Some("Disabled") => Select::Disabled,
            Some(_) => Select::Max,
            None => defaults.select,
        };
        let policies = match &given.policies {
            Some(policies) => policies
                .iter()
                .filter_map(|p| {
                    let limit = match p.type_.as_str() {
                        "Pods" => Limit::Pods(p.value),
                        "Percent" => Limit::Percent(p.value),
                        _ => return None,
                    };
                    Some(Policy { limit, period_seconds: p.period_seconds })
                })
                .collect(),
            None => defaults.policies,
        };
        Rules {
            stabilization_window_seconds: given
                .stabilization_window_seconds
                .unwrap_or(defaults.stabilization_window_seconds),
            select,
            policies,
        }
    }

    fn longest_period(&self) -> i32 {
        self.policies.iter().map(|p| p.period_seconds).max().unwrap_or(0).max(0)
    }
}

impl Behavior {
    /// The HPA's behavior with the defaults filled in (`None` without `spec.behavior`);
    /// `downscale_window` is `--horizontal-pod-autoscaler-downscale-stabilization`.
    pub fn from_spec(
        behavior: Option<&HorizontalPodAutoscalerBehavior>,
        downscale_window: Duration,
    ) -> Option<Behavior> {
        let behavior = behavior?;
        let window = i32::try_from(downscale_window.as_secs()).unwrap_or(i32::MAX);
        Some(Behavior {
            up: Rules::from_spec(behavior.scale_up.as_ref(), Rules::default_up()),
            down: Rules::from_spec(behavior.scale_down.as_ref(), Rules::default_down(window)),
        })
    }
}

/// A recommendation the metrics made, before stabilization.
#[derive(Clone, Copy, Debug)]
struct Recommendation {
    replicas: i32,
    at: Instant,
}

/// A change this controller made to the target (the number of pods added or removed).
#[derive(Clone, Copy, Debug)]
struct ScaleEvent {
    change: i32,
    at: Instant,
    outdated: bool,
}

/// What this controller remembers of one HPA (lost when it restarts, as upstream's).
#[derive(Debug, Default)]
pub struct History {
    recommendations: Vec<Recommendation>,
    scale_ups: Vec<ScaleEvent>,
    scale_downs: Vec<ScaleEvent>,
}

/// A condition's reason and message.
pub type Reason = (&'static str, &'static str);

/// The normalized count and what the `AbleToScale` and `ScalingLimited` conditions say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Normalized {
    pub replicas: i32,
    /// `AbleToScale` (True): stabilized, or ready for a new scale.
    pub able_to_scale: Reason,
    /// `ScalingLimited`: whether the bounds or rates cut the count, and why.
    pub limited: bool,
    pub limited_reason: Reason,
}

const READY_FOR_NEW_SCALE: Reason = ("ReadyForNewScale", "recommended size matches current size");
const SCALE_DOWN_STABILIZED: Reason = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
);
const SCALE_UP_STABILIZED: Reason = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
);
const TOO_FEW: Reason =
    ("TooFewReplicas", "the desired replica count is less than the minimum replica count");
const TOO_MANY: Reason =
    ("TooManyReplicas", "the desired replica count is more than the maximum replica count");
const SCALE_UP_LIMIT: Reason =
    ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate");
const SCALE_DOWN_LIMIT: Reason = (
    "ScaleDownLimit",
    "the desired replica count is decreasing faster than the maximum scale rate",
);
const WITHIN_RANGE: Reason =
    ("DesiredWithinRange", "the desired count is within the acceptable range");

/// `now - seconds`; `None` when that is before this process's clock began (then nothing
/// recorded is older).
fn cutoff(now: Instant, seconds: i64) -> Option<Instant> {
    now.checked_sub(Duration::from_secs(seconds.max(0) as u64))
}

fn after(at: Instant, cutoff: Option<Instant>) -> bool {
    cutoff.is_none_or(|c| at > c)
}

fn before(at: Instant, cutoff: Option<Instant>) -> bool {
    cutoff.is_some_and(|c| at < c)
}

impl History {
    /// Remembers the target's count as the first recommendation, once.
    pub fn record_initial(&mut self, current: i32, now: Instant) {
        if self.recommendations.is_empty() {
            self.recommendations.push(Recommendation { replicas: current, at: now });
        }
    }

    /// Records `desired` (the metrics' count) and returns the count to give the target,
    /// with `behavior` (see [`Behavior::from_spec`]) or without.
    #[allow(clippy::too_many_arguments)]
    pub fn normalize(
        &mut self,
        behavior: Option<&Behavior>,
        downscale_window: Duration,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Instant,
    ) -> Normalized {
        match behavior {
            None => self.normalize_plain(downscale_window, current, desired, min, max, now),
            Some(b) => self.normalize_with_behavior(b, current, desired, min, max, now),
        }
    }

    fn normalize_plain(
        &mut self,
        window: Duration,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Instant,
    ) -> Normalized {
        // The highest recommendation of the window; the oldest expired one is reused.
        let cut = cutoff(now, window.as_secs() as i64);
        let mut stabilized = desired;
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if before(r.at, cut) {
                old = Some(i);
            } else if r.replicas > stabilized {
                stabilized = r.replicas;
            }
        }
        self.remember(old, desired, now);
        let able_to_scale =
            if stabilized != desired { SCALE_DOWN_STABILIZED } else { READY_FOR_NEW_SCALE };
        // A scale-up is capped at twice the count (4 at least), against bogus usage spikes.
        let scale_up_limit = (2.0 * f64::from(current)).max(4.0) as i32;
        let (maximum, over) =
            if max > scale_up_limit { (scale_up_limit, SCALE_UP_LIMIT) } else { (max, TOO_MANY) };
        let (replicas, reason) = if stabilized < min {
            (min, TOO_FEW)
        } else if stabilized > maximum {
            (maximum, over)
        } else {
            (stabilized, WITHIN_RANGE)
        };
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            limited_reason: reason,
        }
    }

    fn normalize_with_behavior(
        &mut self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Instant,
    ) -> Normalized {
        let (stabilized, stabilized_reason) = self.stabilize(behavior, current, desired, now);
        let able_to_scale =
            if stabilized != desired { stabilized_reason } else { READY_FOR_NEW_SCALE };
        let (replicas, reason) = self.limit_rate(behavior, current, stabilized, min, max, now);
        Normalized {
            replicas,
            able_to_scale,
            limited: replicas != stabilized,
            limited_reason: reason,
        }
    }

    /// Keeps the count between the lowest recommendation of the scale-up window and the
    /// highest of the scale-down window, and records `desired`.
    fn stabilize(
        &mut self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        now: Instant,
    ) -> (i32, Reason) {
        let up_cut = cutoff(now, i64::from(behavior.up.stabilization_window_seconds));
        let down_cut = cutoff(now, i64::from(behavior.down.stabilization_window_seconds));
        let (mut up, mut down) = (desired, desired);
        let mut old = None;
        for (i, r) in self.recommendations.iter().enumerate() {
            if after(r.at, up_cut) {
                up = up.min(r.replicas);
            }
            if after(r.at, down_cut) {
                down = down.max(r.replicas);
            }
            if before(r.at, up_cut) && before(r.at, down_cut) {
                old = Some(i);
            }
        }
        let stabilized = current.max(up).min(down);
        self.remember(old, desired, now);
        let reason = if desired >= current { SCALE_UP_STABILIZED } else { SCALE_DOWN_STABILIZED };
        (stabilized, reason)
    }

    fn remember(&mut self, reuse: Option<usize>, replicas: i32, now: Instant) {
        let r = Recommendation { replicas, at: now };
        match reuse {
            Some(i) => self.recommendations[i] = r,
            None => self.recommendations.push(r),
        }
    }

    /// Bounds `desired` by `min`, `max` and the policies' rates.
    fn limit_rate(
        &self,
        behavior: &Behavior,
        current: i32,
        desired: i32,
        min: i32,
        max: i32,
        now: Instant,
    ) -> (i32, Reason) {
        if desired > current {
            let limit =
                scale_up_limit(current, &self.scale_ups, &self.scale_downs, &behavior.up, now)
                    .max(current);
            let (maximum, reason) =
                if max > limit { (limit, SCALE_UP_LIMIT) } else { (max, TOO_MANY) };
            if desired > maximum {
                return (maximum, reason);
            }
        } else if desired < current {
            let limit =
                scale_down_limit(current, &self.scale_ups, &self.scale_downs, &behavior.down, now)
                    .min(current);
            let (minimum, reason) =
                if min < limit { (limit, SCALE_DOWN_LIMIT) } else { (min, TOO_FEW) };
            if desired < minimum {
                return (minimum, reason);
            }
        }
        (desired, WITHIN_RANGE)
    }

    /// Records a change of the target from `previous` to `new` (with a behavior only: the
    /// policies are what reads them), reusing an entry older than every policy's period.
    pub fn record_scale(
        &mut self,
        behavior: Option<&Behavior>,
        previous: i32,
        new: i32,
        now: Instant,
    ) {
        let Some(behavior) = behavior else { return };
        let (events, rules, change) = if new > previous {
            (&mut self.scale_ups, &behavior.up, new - previous)
        } else {
            (&mut self.scale_downs, &behavior.down, previous - new)
        };
        let cut = cutoff(now, i64::from(rules.longest_period()));
        let mut reuse = None;
        for (i, e) in events.iter_mut().enumerate() {
            if before(e.at, cut) {
                e.outdated = true;
            }
            if e.outdated {
                reuse = Some(i);
            }
        }
        let event = ScaleEvent { change, at: now, outdated: false };
        match reuse {
            Some(i) => events[i] = event,
            None => events.push(event),
        }
    }
}

/// The pods added (or removed) within the last `period_seconds`.
fn changes_within(period_seconds: i32, events: &[ScaleEvent], now: Instant) -> i32 {
    let cut = cutoff(now, i64::from(period_seconds));
    events.iter().filter(|e| after(e.at, cut)).map(|e| e.change).sum()
}

/// The highest count the scale-up policies allow now.
fn scale_up_limit(
    current: i32,
    ups: &[ScaleEvent],
    downs: &[ScaleEvent],
    rules: &Rules,
    now: Instant,
) -> i32 {
    let pick: fn(i32, i32) -> i32 = match rules.select {
        Select::Disabled => return current,
        Select::Min => i32::min,
        Select::Max => i32::max,
    };
    let mut result = if rules.select == Select::Min { i32::MAX } else { i32::MIN };
    for policy in &rules.policies {
        let start = current - changes_within(policy.period_seconds, ups, now)
            + changes_within(policy.period_seconds, downs, now);
        let proposed = match policy.limit {
            Limit::Pods(n) => start.saturating_add(n),
            // Rounded up, or a small target would never grow.
            Limit::Percent(p) => (f64::from(start) * (1.0 + f64::from(p) / 100.0))
                .ceil()
                .min(f64::from(i32::MAX)) as i32,
        };
        result = pick(result, proposed);
    }
    result
}

/// The lowest count the scale-down policies allow now.
fn scale_down_limit(
    current: i32,
    ups: &[ScaleEvent],
    downs: &[ScaleEvent],
    rules: &Rules,
    now: Instant,
) -> i32 {
    let pick: fn(i32, i32) -> i32 = match rules.select {
        Select::Disabled => return current,
        // The smallest change down is the highest count.
        Select::Min => i32::max,
        Select::Max => i32::min,
    };
    let mut result = if rules.select == Select::Min { i32::MIN } else { i32::MAX };
    for policy in &rules.policies {
        let start = current - changes_within(policy.period_seconds, ups, now)
            + changes_within(policy.period_seconds, downs, now);
        let proposed = match policy.limit {
            Limit::Pods(n) => start.saturating_sub(n),
            // Truncated, as upstream's conversion to an integer.
            Limit::Percent(p) => (f64::from(start) * (1.0 - f64::from(p) / 100.0)) as i32,
        };
        result = pick(result, proposed);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::autoscaling::v2::HPAScalingPolicy;

    const FIVE_MINUTES: Duration = Duration::from_secs(300);

    /// A clock far enough from the process start that windows never reach before it.
    fn clock() -> Instant {
        Instant::now() + Duration::from_secs(100_000)
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn without_behavior_a_scale_down_waits_for_the_window() {
        let t0 = clock();
        let mut h = History::default();
        h.record_initial(5, t0);
        // The metrics ask for 2: the window still holds 5.
        let n = h.normalize(None, FIVE_MINUTES, 5, 2, 1, 10, t0 + secs(15));
        assert_eq!(n.replicas, 5);
        assert_eq!(n.able_to_scale.0, "ScaleDownStabilized");
        assert!(!n.limited);
        assert_eq!(n.limited_reason.0, "DesiredWithinRange");
        // After the window the 5 has expired (its entry is reused), the 2 of t0+15 not yet.
        let n = h.normalize(None, FIVE_MINUTES, 5, 1, 1, 10, t0 + secs(301));
        assert_eq!(n.replicas, 2);
        assert_eq!(h.recommendations.len(), 2, "the expired entry was reused");
        let n = h.normalize(None, FIVE_MINUTES, 2, 1, 1, 10, t0 + secs(400));
        assert_eq!((n.replicas, n.able_to_scale.0), (1, "ReadyForNewScale"));
    }

    #[test]
    fn without_behavior_a_scale_up_doubles_at_most_and_bounds_hold() {
        let t0 = clock();
        let mut h = History::default();
        h.record_initial(1, t0);
        let n = h.normalize(None, FIVE_MINUTES, 1, 20, 1, 10, t0);
        assert_eq!((n.replicas, n.limited, n.limited_reason.0), (4, true, "ScaleUpLimit"));
        let n = h.normalize(None, FIVE_MINUTES, 4, 20, 1, 10, t0 + secs(15));
        assert_eq!((n.replicas, n.limited_reason.0), (8, "ScaleUpLimit"));
        let n = h.normalize(None, FIVE_MINUTES, 8, 20, 1, 10, t0 + secs(30));
        assert_eq!((n.replicas, n.limited_reason.0), (10, "TooManyReplicas"));
        let mut h = History::default();
        let n = h.normalize(None, FIVE_MINUTES, 3, 1, 2, 10, t0);
        assert_eq!((n.replicas, n.limited, n.limited_reason.0), (2, true, "TooFewReplicas"));
    }

    fn rules(window: i32, select: Select, policies: &[(Limit, i32)]) -> Rules {
        Rules {
            stabilization_window_seconds: window,
            select,
            policies: policies
                .iter()
                .map(|(limit, period)| Policy { limit: *limit, period_seconds: *period })
                .collect(),
        }
    }

    #[test]
    fn default_behavior_scales_up_by_four_pods_or_doubling_per_period() {
        let b = Behavior { up: Rules::default_up(), down: Rules::default_down(300) };
        let t0 = clock();
        let mut h = History::default();
        h.record_initial(1, t0);
        // 1 -> max(1+4, 2) = 5.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 1, 50, 1, 100, t0);
        assert_eq!((n.replicas, n.limited_reason.0), (5, "ScaleUpLimit"));
        h.record_scale(Some(&b), 1, 5, t0);
        // 5 s later the period still holds the +4: from 1 again -> 5, no further growth.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 5, 50, 1, 100, t0 + secs(5));
        assert_eq!(n.replicas, 5);
        // After the period: 5 -> max(9, 10) = 10.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 5, 50, 1, 100, t0 + secs(16));
        assert_eq!(n.replicas, 10);
    }

    #[test]
    fn scale_down_policies_and_select_policy() {
        let t0 = clock();
        let down = rules(0, Select::Max, &[(Limit::Pods(2), 60), (Limit::Percent(50), 60)]);
        let b = Behavior { up: Rules::default_up(), down };
        let mut h = History::default();
        // Max: the larger change: 10 -> min(8, 5) = 5.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 10, 1, 1, 20, t0);
        assert_eq!((n.replicas, n.limited_reason.0), (5, "ScaleDownLimit"));
        h.record_scale(Some(&b), 10, 5, t0);
        // Within the period the start is still 10: nothing more may go.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 5, 1, 1, 20, t0 + secs(30));
        assert_eq!(n.replicas, 5);
        // Min: the smaller change: 10 -> max(8, 5) = 8.
        let b = Behavior {
            up: Rules::default_up(),
            down: rules(0, Select::Min, &[(Limit::Pods(2), 60), (Limit::Percent(50), 60)]),
        };
        let n = History::default().normalize(Some(&b), FIVE_MINUTES, 10, 1, 1, 20, t0);
        assert_eq!(n.replicas, 8);
        // Disabled: no scale-down at all.
        let b = Behavior { up: Rules::default_up(), down: rules(0, Select::Disabled, &[]) };
        let n = History::default().normalize(Some(&b), FIVE_MINUTES, 10, 1, 1, 20, t0);
        assert_eq!((n.replicas, n.limited_reason.0), (10, "ScaleDownLimit"));
        // Down to the minimum, which binds before the policies.
        let b = Behavior { up: Rules::default_up(), down: Rules::default_down(0) };
        let n = History::default().normalize(Some(&b), FIVE_MINUTES, 10, 1, 3, 20, t0);
        assert_eq!((n.replicas, n.limited_reason.0), (3, "TooFewReplicas"));
    }

    #[test]
    fn stabilization_windows_of_both_directions() {
        let t0 = clock();
        let b = Behavior {
            up: rules(60, Select::Max, &[(Limit::Percent(1000), 15)]),
            down: rules(120, Select::Max, &[(Limit::Percent(100), 15)]),
        };
        let mut h = History::default();
        h.record_initial(3, t0);
        // Up to 6 wanted; the up window holds 3: stays (the lowest recent recommendation).
        let n = h.normalize(Some(&b), FIVE_MINUTES, 3, 6, 1, 20, t0 + secs(10));
        assert_eq!((n.replicas, n.able_to_scale.0), (3, "ScaleUpStabilized"));
        // After 60 s the 3 has left the up window: 6.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 3, 6, 1, 20, t0 + secs(71));
        assert_eq!((n.replicas, n.able_to_scale.0), (6, "ReadyForNewScale"));
        // Down to 2 wanted: the down window (120 s) holds 6.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 6, 2, 1, 20, t0 + secs(100));
        assert_eq!((n.replicas, n.able_to_scale.0), (6, "ScaleDownStabilized"));
        // Once the 6s are older than 120 s, the highest left is 2.
        let n = h.normalize(Some(&b), FIVE_MINUTES, 6, 2, 1, 20, t0 + secs(230));
        assert_eq!(n.replicas, 2);
    }

    #[test]
    fn behavior_from_the_spec_fills_in_defaults() {
        let spec = HorizontalPodAutoscalerBehavior {
            scale_down: Some(HPAScalingRules {
                stabilization_window_seconds: Some(10),
                ..Default::default()
            }),
            scale_up: Some(HPAScalingRules {
                select_policy: Some("Min".into()),
                policies: Some(vec![HPAScalingPolicy {
                    type_: "Pods".into(),
                    value: 1,
                    period_seconds: 30,
                }]),
                ..Default::default()
            }),
        };
        let b = Behavior::from_spec(Some(&spec), FIVE_MINUTES).unwrap();
        assert_eq!(b.down, Rules::default_down(10));
        assert_eq!(b.up, rules(0, Select::Min, &[(Limit::Pods(1), 30)]));
        // A scale-down without a window gets the flag's.
        let spec = HorizontalPodAutoscalerBehavior::default();
        let b = Behavior::from_spec(Some(&spec), Duration::from_secs(42)).unwrap();
        assert_eq!(b.down.stabilization_window_seconds, 42);
        assert_eq!(Behavior::from_spec(None, FIVE_MINUTES), None);
    }

    #[test]
    fn old_scale_events_are_reused() {
        let b = Behavior { up: Rules::default_up(), down: Rules::default_down(0) };
        let t0 = clock();
        let mut h = History::default();
        h.record_scale(Some(&b), 1, 2, t0);
        h.record_scale(Some(&b), 2, 3, t0 + secs(5));
        assert_eq!(h.scale_ups.len(), 2);
        assert_eq!(changes_within(15, &h.scale_ups, t0 + secs(10)), 2);
        h.record_scale(Some(&b), 3, 4, t0 + secs(30));
        assert_eq!(h.scale_ups.len(), 2, "an outdated event's entry is reused");
        assert_eq!(changes_within(15, &h.scale_ups, t0 + secs(31)), 1);
        // Without a behavior nothing is recorded.
        h.record_scale(None, 4, 1, t0);
        assert!(h.scale_downs.is_empty());
    }
}
