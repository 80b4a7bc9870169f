//! ServiceAccounts: upstream checks their metadata only (`ValidateServiceAccount[Update]`).

use serde_json::Value;

use crate::validation::FieldError;

/// `ValidateServiceAccount[Update]` checks the metadata only (done by the caller): upstream
/// leaves `secrets` and `imagePullSecrets` to warnings, not errors.
pub fn service_account(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let _ = (obj, old);
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn service_accounts_have_no_checks_of_their_own() {
        let sa = json!({"secrets": [{"name": "s", "namespace": "other"}],
            "imagePullSecrets": [{"name": ""}]});
        assert!(service_account(&sa, None).is_empty());
        assert!(service_account(&sa, Some(&json!({}))).is_empty());
    }
}
