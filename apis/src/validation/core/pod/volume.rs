//! A pod spec's volumes: names, exactly one source each, and each common source's fields
//! (projected ones included), with upstream's messages.

use super::*;

pub(super) const FILE_MODE_MSG: &str =
    "must be a number between 0 and 0777 (octal), both inclusive";

/// The pod's volumes; returns the names of those without errors, which mounts may use.
pub(super) fn volumes(list: &Value, at: &str, errors: &mut Vec<FieldError>) -> HashSet<String> {
    let mut names = HashSet::new();
    for (i, v) in list.as_array().into_iter().flatten().enumerate() {
        let item = format!("{at}[{i}]");
        let mut found = volume_source(v, &item);
        let name = str_of(&v["name"]);
        if name.is_empty() {
            found.push(FieldError::required(format!("{item}.name"), ""));
        } else {
            for p in name_problems(name, NameRule::Label) {
                found.push(FieldError::invalid(format!("{item}.name"), &v["name"], &p));
            }
        }
        if names.contains(name) {
            found.push(FieldError::duplicate(format!("{item}.name"), &string(&v["name"])));
        }
        if found.is_empty() {
            names.insert(name.to_string());
        }
        errors.extend(found);
    }
    names
}

/// Exactly one volume source, and the required fields of the common ones. The names in the
/// "more than 1" errors are upstream's (including its `downwarAPI` and `cephFS`).
pub(super) fn volume_source(v: &Value, at: &str) -> Vec<FieldError> {
    const SOURCES: [(&str, &str); 30] = [
        ("emptyDir", "emptyDir"),
        ("hostPath", "hostPath"),
        ("gitRepo", "gitRepo"),
        ("gcePersistentDisk", "gcePersistentDisk"),
        ("awsElasticBlockStore", "awsElasticBlockStore"),
        ("secret", "secret"),
        ("nfs", "nfs"),
        ("iscsi", "iscsi"),
        ("glusterfs", "glusterfs"),
        ("flocker", "flocker"),
        ("persistentVolumeClaim", "persistentVolumeClaim"),
        ("rbd", "rbd"),
        ("cinder", "cinder"),
        ("cephfs", "cephFS"),
        ("quobyte", "quobyte"),
        ("downwardAPI", "downwarAPI"),
        ("fc", "fc"),
        ("flexVolume", "flexVolume"),
        ("configMap", "configMap"),
        ("azureFile", "azureFile"),
        ("vsphereVolume", "vsphereVolume"),
        ("photonPersistentDisk", "photonPersistentDisk"),
        ("portworxVolume", "portworxVolume"),
        ("azureDisk", "azureDisk"),
        ("storageos", "storageos"),
        ("projected", "projected"),
        ("scaleIO", "scaleIO"),
        ("csi", "csi"),
        ("ephemeral", "ephemeral"),
        ("image", "image"),
    ];
    let mut errors = Vec::new();
    let mut count = 0;
    for (key, reported) in SOURCES {
        let s = &v[key];
        if s.is_null() {
            continue;
        }
        if count > 0 {
            errors.push(FieldError::forbidden(
                format!("{at}.{reported}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let at = format!("{at}.{key}");
        match key {
            "emptyDir" if Quantity::parse(&s["sizeLimit"]).is_some_and(|q| q.nanos < 0) => {
                errors.push(FieldError::forbidden(
                    format!("{at}.sizeLimit"),
                    "SizeLimit field must be a valid resource quantity",
                ));
            }
            "hostPath" => {
                let path = str_of(&s["path"]);
                if path.is_empty() {
                    errors.push(FieldError::required(format!("{at}.path"), ""));
                    continue;
                }
                no_backsteps(path, &format!("{at}.path"), &mut errors);
                errors.extend(one_of(&format!("{at}.type"), &s["type"], &HOST_PATH_TYPES));
            }
            "gitRepo" => {
                if str_of(&s["repository"]).is_empty() {
                    errors.push(FieldError::required(format!("{at}.repository"), ""));
                }
                local_descending_path(
                    str_of(&s["directory"]),
                    &format!("{at}.directory"),
                    &mut errors,
                );
            }
            "secret" | "configMap" => {
                let name_field = if key == "secret" { "secretName" } else { "name" };
                if str_of(&s[name_field]).is_empty() {
                    errors.push(FieldError::required(format!("{at}.{name_field}"), ""));
                }
                file_mode(&s["defaultMode"], &format!("{at}.defaultMode"), &mut errors);
                for (j, item) in s["items"].as_array().into_iter().flatten().enumerate() {
                    key_to_path(item, &format!("{at}.items[{j}]"), &mut errors);
                }
            }
            "nfs" => {
                if str_of(&s["server"]).is_empty() {
                    errors.push(FieldError::required(format!("{at}.server"), ""));
                }
                let path = str_of(&s["path"]);
                if path.is_empty() {
                    errors.push(FieldError::required(format!("{at}.path"), ""));
                }
                if !path.starts_with('/') {
                    errors.push(FieldError::invalid(
                        format!("{at}.path"),
                        &string(&s["path"]),
                        "must be an absolute path",
                    ));
                }
            }
            "persistentVolumeClaim" if str_of(&s["claimName"]).is_empty() => {
                errors.push(FieldError::required(format!("{at}.claimName"), ""));
            }
            "downwardAPI" => {
                file_mode(&s["defaultMode"], &format!("{at}.defaultMode"), &mut errors);
                // Upstream reports each item's errors at the source, not the item.
                for item in s["items"].as_array().into_iter().flatten() {
                    downward_api_file(item, &at, &mut errors);
                }
            }
            "projected" => projected(s, &at, &mut errors),
            _ => {}
        }
    }
    if count == 0 {
        errors.push(FieldError::required(at, "must specify a volume type"));
    }
    errors
}

pub(super) fn projected(s: &Value, at: &str, errors: &mut Vec<FieldError>) {
    file_mode(&s["defaultMode"], &format!("{at}.defaultMode"), errors);
    let mut paths = HashSet::new();
    for (i, source) in s["sources"].as_array().into_iter().flatten().enumerate() {
        let src = format!("{at}.sources[{i}]");
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let r = &source[kind];
            if r.is_null() {
                continue;
            }
            count += 1;
            if str_of(&r["name"]).is_empty() {
                errors.push(FieldError::required(format!("{src}.{kind}.name"), ""));
            }
            for (j, item) in r["items"].as_array().into_iter().flatten().enumerate() {
                key_to_path(item, &format!("{src}.{kind}.items[{j}]"), errors);
                let path = str_of(&item["path"]);
                if !path.is_empty() && !paths.insert(path.to_string()) {
                    errors.push(FieldError::invalid(
                        at,
                        &string(&r["name"]),
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        let downward = &source["downwardAPI"];
        if !downward.is_null() {
            count += 1;
            for item in downward["items"].as_array().into_iter().flatten() {
                downward_api_file(item, &format!("{src}.downwardAPI"), errors);
                let path = str_of(&item["path"]);
                if !path.is_empty() && !paths.insert(path.to_string()) {
                    errors.push(FieldError::invalid(
                        at,
                        &item["path"],
                        "conflicting duplicate paths",
                    ));
                }
            }
        }
        let token = &source["serviceAccountToken"];
        if !token.is_null() {
            count += 1;
            // Upstream defaults expirationSeconds to an hour.
            let expiry = &token["expirationSeconds"];
            let seconds = expiry.as_i64().unwrap_or(3600);
            let field = format!("{src}.serviceAccountToken.expirationSeconds");
            if seconds < 600 {
                errors.push(FieldError::invalid(
                    &field,
                    expiry,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                errors.push(FieldError::invalid(
                    &field,
                    expiry,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            match str_of(&token["path"]) {
                "" => errors.push(FieldError::required(format!("{at}.path"), "")),
                path => local_non_reserved_path(path, &format!("{at}.path"), errors),
            }
        }
        if !source["clusterTrustBundle"].is_null() {
            count += 1;
        }
        if count > 1 {
            errors.push(FieldError::forbidden(
                src,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

pub(super) fn downward_api_file(item: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let path = str_of(&item["path"]);
    if path.is_empty() {
        errors.push(FieldError::required(format!("{at}.path"), ""));
    }
    local_non_reserved_path(path, &format!("{at}.path"), errors);
    if !item["fieldRef"].is_null() {
        let r = &item["fieldRef"];
        let field = str_of(&r["fieldPath"]);
        const VOLUME_FIELDS: [&str; 5] = [
            "metadata.annotations",
            "metadata.labels",
            "metadata.name",
            "metadata.namespace",
            "metadata.uid",
        ];
        if field.is_empty() {
            errors.push(FieldError::required(format!("{at}.fieldRef.fieldPath"), ""));
        } else if !field.contains("['") && !VOLUME_FIELDS.contains(&field) {
            errors.push(FieldError::unsupported(
                format!("{at}.fieldRef.fieldPath"),
                &r["fieldPath"],
                &VOLUME_FIELDS,
            ));
        }
        if !item["resourceFieldRef"].is_null() {
            errors.push(FieldError::invalid(
                at,
                &Value::String("resource".into()),
                "fieldRef and resourceFieldRef can not be specified simultaneously",
            ));
        }
    } else if !item["resourceFieldRef"].is_null() {
        if str_of(&item["resourceFieldRef"]["containerName"]).is_empty() {
            errors.push(FieldError::required(format!("{at}.resourceFieldRef.containerName"), ""));
        }
    } else {
        errors.push(FieldError::required(at, "one of fieldRef and resourceFieldRef is required"));
    }
    file_mode(&item["mode"], &format!("{at}.mode"), errors);
}

pub(super) fn key_to_path(item: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if str_of(&item["key"]).is_empty() {
        errors.push(FieldError::required(format!("{at}.key"), ""));
    }
    let path = str_of(&item["path"]);
    if path.is_empty() {
        errors.push(FieldError::required(format!("{at}.path"), ""));
    }
    local_non_reserved_path(path, &format!("{at}.path"), errors);
    file_mode(&item["mode"], &format!("{at}.mode"), errors);
}

pub(super) fn file_mode(mode: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if mode.as_i64().is_some_and(|m| !(0..=0o777).contains(&m)) {
        errors.push(FieldError::invalid(at, mode, FILE_MODE_MSG));
    }
}

/// A relative path without `..` elements.
pub(super) fn local_descending_path(path: &str, at: &str, errors: &mut Vec<FieldError>) {
    if path.starts_with('/') {
        errors.push(FieldError::invalid(
            at,
            &Value::String(path.into()),
            "must be a relative path",
        ));
    }
    no_backsteps(path, at, errors);
}

/// As [`local_descending_path`], and not starting with `..` either.
pub(super) fn local_non_reserved_path(path: &str, at: &str, errors: &mut Vec<FieldError>) {
    local_descending_path(path, at, errors);
    if path.starts_with("..") && !path.starts_with("../") {
        errors.push(FieldError::invalid(
            at,
            &Value::String(path.into()),
            "must not start with '..'",
        ));
    }
}
