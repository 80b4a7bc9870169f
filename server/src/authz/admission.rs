//! The authorizer as admission plugins ask it ([`rkube_admission::Authorizer`]): the same
//! decision a request with these attributes gets from the server's authorizer chain
//! (`system:masters` included), for the plugins that check a permission other than the
//! request's own (CertificateApproval's `approve`, CertificateSigning's `sign`, the
//! admission policies' `authorizer` on resources and non-resource paths).

use std::borrow::Cow;
use std::sync::Arc;

use rkube_admission::{ResourceCheck, UserInfo as AdmissionUser};

use crate::auth::UserInfo;
use crate::authz::{Attributes, Authorizer};

/// The server's authorizer, for the admission chain.
pub struct ForAdmission(pub Arc<dyn Authorizer>);

/// The server's user for an admission plugin's.
fn user_of(user: &AdmissionUser<'_>) -> UserInfo {
    UserInfo {
        name: user.name.to_string(),
        uid: user.uid.to_string(),
        groups: user.groups.to_vec(),
        extra: user.extra.cloned().unwrap_or_default(),
    }
}

impl rkube_admission::Authorizer for ForAdmission {
    fn allowed_path(&self, user: &AdmissionUser<'_>, verb: &str, path: &str) -> bool {
        let user = user_of(user);
        let attributes = Attributes {
            user: &user,
            verb: Cow::Borrowed(verb),
            namespace: "",
            api_group: "",
            api_version: "",
            resource: "",
            subresource: "",
            name: Cow::Borrowed(""),
            resource_request: false,
            path,
        };
        self.0.authorize(&attributes).is_allowed()
    }

    fn allowed(&self, user: &AdmissionUser<'_>, check: &ResourceCheck<'_>) -> bool {
        let user = user_of(user);
        let attributes = Attributes {
            user: &user,
            verb: Cow::Borrowed(check.verb),
            namespace: check.namespace,
            api_group: check.group,
            api_version: "*",
            resource: check.resource,
            subresource: "",
            name: Cow::Borrowed(check.name),
            resource_request: true,
            path: "",
        };
        self.0.authorize(&attributes).is_allowed()
    }
}
