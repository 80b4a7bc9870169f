//! Reading the API server's errors the way upstream's controllers do: the message a Status
//! carries (what Go's `err.Error()` prints), and the errors that only mean "not now".

/// The message of an API error as upstream prints it (the Status message), else the error.
pub fn message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if !status.message.is_empty() => status.message.clone(),
        other => other.to_string(),
    }
}

/// Whether a create failed because its namespace is being deleted: every later one will too.
pub fn namespace_terminating(e: &kube::Error) -> bool {
    let kube::Error::Api(status) = e else { return false };
    let by_cause = status
        .details
        .as_ref()
        .is_some_and(|d| d.causes.iter().any(|c| c.reason.as_str() == "NamespaceTerminating"));
    by_cause || status.message.contains("because it is being terminated")
}

/// The HTTP code of an API error (404 NotFound, 409 AlreadyExists or Conflict, ...).
pub fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminating_namespaces_are_recognised() {
        let forbidden = |message: &str| {
            kube::Error::Api(Box::new(
                kube::core::Status::failure(message, "Forbidden").with_code(403),
            ))
        };
        assert!(namespace_terminating(&forbidden(
            "pods \"web-x\" is forbidden: unable to create new content in namespace ns because it is being terminated"
        )));
        assert!(!namespace_terminating(&forbidden(
            "pods \"web-x\" is forbidden: exceeded quota: q"
        )));
        assert_eq!(message(&forbidden("exceeded quota: q")), "exceeded quota: q");
    }
}
