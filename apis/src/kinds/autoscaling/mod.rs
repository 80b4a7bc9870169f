//! `autoscaling` (v2 stored, v1 served from it).

mod horizontalpodautoscalers;
mod horizontalpodautoscalers_v1;

pub use horizontalpodautoscalers::HorizontalPodAutoscalers;
pub use horizontalpodautoscalers_v1::HorizontalPodAutoscalersV1;
