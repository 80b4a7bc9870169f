//! CertificateSigningRequests (`certificates.k8s.io/v1`): any name; the spec records
//! who asked (whatever the body said) and never changes after create.

use serde_json::{json, Value};

use crate::strategy::{Requester, SelectableField, Strategy};
use crate::tables::Printer;
use crate::validation;
use crate::validation::{FieldError, NameRule};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CertificateSigningRequests;

impl Strategy for CertificateSigningRequests {
    fn name_rule(&self) -> NameRule {
        NameRule::Any
    }

    fn record_requester(&self, obj: &mut Value, requester: Option<&Requester>) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        for field in ["username", "uid", "groups", "extra"] {
            spec.shift_remove(field);
        }
        let Some(requester) = requester else { return };
        // As Go writes the fields: empty strings and lists are left out.
        if !requester.name.is_empty() {
            spec.insert("username".into(), json!(requester.name));
        }
        if !requester.uid.is_empty() {
            spec.insert("uid".into(), json!(requester.uid));
        }
        if !requester.groups.is_empty() {
            spec.insert("groups".into(), json!(requester.groups));
        }
        if !requester.extra.is_empty() {
            spec.insert("extra".into(), json!(requester.extra));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, _subresource: Option<&str>) {
        new["spec"] = old["spec"].clone();
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::certificates::certificate_signing_request(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.signerName", &["spec", "signerName"])]
    }

    fn printer(&self) -> Printer {
        Printer::CertificateSigningRequest
    }
}
