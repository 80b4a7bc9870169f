//! `apiextensions.k8s.io/v1`.

mod customresourcedefinitions;

pub use customresourcedefinitions::CustomResourceDefinitions;
