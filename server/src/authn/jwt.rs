//! Service-account JWTs as kube-apiserver makes and checks them: RS256 over upstream's claims
//! (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`, `jti`, and the private `kubernetes.io` claim
//! naming the namespace, the service account and the object the token is bound to).
//!
//! The JOSE work (compact serialization, headers, claims) is the `jsonwebtoken` crate's; the
//! RSA signatures are made and checked with openssl (a small `CryptoProvider`), the library
//! the rest of rkube's cryptography uses.
//!
//! Checking a token has two halves, each testable alone: [`Verifier::verify`] (issuer,
//! signature, audience, time; no I/O) and [`validate_objects`] (the service account and the
//! bound object still exist with the uids in the token), over an [`ObjectGetter`].

use std::collections::BTreeMap;
use std::future::Future;

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Deserializer, Serialize};

use crate::auth::UserInfo;

/// How far clocks may disagree: go-jose's default leeway, which upstream's checks use.
pub const LEEWAY_SECONDS: i64 = 60;

pub use rkube_certs::jose::KeyError;

/// A named object with its uid, as the `kubernetes.io` claim names them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl ObjectRef {
    pub fn new(name: &str, uid: &str) -> ObjectRef {
        ObjectRef { name: name.to_string(), uid: uid.to_string() }
    }
}

/// The private `kubernetes.io` claim. Fields in the order upstream's tokens show them
/// (go-jose writes the merged claims as a sorted map).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    #[serde(default)]
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "numeric_date")]
    pub warnafter: Option<i64>,
}

/// A token's claims, in upstream's (sorted) order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default, deserialize_with = "one_or_many")]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "numeric_date")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "numeric_date")]
    pub iat: Option<i64>,
    #[serde(default)]
    pub iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(rename = "kubernetes.io", default)]
    pub kubernetes: KubernetesClaims,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "numeric_date")]
    pub nbf: Option<i64>,
    #[serde(default)]
    pub sub: String,
}

/// What a token is bound to, besides its service account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Binding {
    #[default]
    None,
    /// A pod, and the node it runs on when known.
    Pod {
        pod: ObjectRef,
        node: Option<ObjectRef>,
    },
    Secret(ObjectRef),
    Node(ObjectRef),
}

/// What a new token says.
#[derive(Clone, Debug, Default)]
pub struct TokenSpec {
    pub namespace: String,
    pub service_account: ObjectRef,
    pub audiences: Vec<String>,
    /// When the token is made (Unix seconds).
    pub now: i64,
    pub expiration_seconds: i64,
    /// Seconds after which using the token only warns (upstream's `warnafter`); 0: none.
    pub warn_after_seconds: i64,
    pub binding: Binding,
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

impl Claims {
    /// The claims of a new token from `issuer`, with a fresh `jti`.
    pub fn new(issuer: &str, spec: &TokenSpec) -> Claims {
        let mut kubernetes = KubernetesClaims {
            namespace: spec.namespace.clone(),
            serviceaccount: spec.service_account.clone(),
            ..Default::default()
        };
        match &spec.binding {
            Binding::None => {}
            Binding::Pod { pod, node } => {
                kubernetes.pod = Some(pod.clone());
                kubernetes.node = node.clone();
            }
            Binding::Secret(secret) => kubernetes.secret = Some(secret.clone()),
            Binding::Node(node) => kubernetes.node = Some(node.clone()),
        }
        if spec.warn_after_seconds != 0 {
            kubernetes.warnafter = Some(spec.now + spec.warn_after_seconds);
        }
        Claims {
            aud: spec.audiences.clone(),
            exp: Some(spec.now + spec.expiration_seconds),
            iat: Some(spec.now),
            iss: issuer.to_string(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes,
            nbf: Some(spec.now),
            sub: username(&spec.namespace, &spec.service_account.name),
        }
    }

    /// go-jose's time checks with [`LEEWAY_SECONDS`], with upstream's messages.
    pub fn check_time(&self, now: i64) -> Result<(), String> {
        if self.nbf.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
            return Err("service account token is not valid yet".into());
        }
        if self.exp.is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
            return Err("service account token has expired".into());
        }
        if self.iat.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
            return Err("service account token is issued in the future".into());
        }
        Ok(())
    }
}

/// `aud` may be one string or a list (RFC 7519).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
        Null(()),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
        OneOrMany::Null(()) => Vec::new(),
    })
}

/// A NumericDate: seconds, possibly with a fraction.
fn numeric_date<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let value = Option::<f64>::deserialize(d)?;
    Ok(value.map(|v| v as i64))
}

/// The key new tokens are signed with (upstream's header: `alg` RS256 and the key id).
pub type SigningKey = rkube_certs::jose::RsaSigningKey;

/// The keys tokens are verified with, by key id.
#[derive(Default)]
pub struct PublicKeys {
    keys: Vec<(String, DecodingKey)>,
}

impl PublicKeys {
    /// Adds every key of a PEM file: public keys, private keys (their public half) and
    /// certificates, as `--service-account-key-file` takes them.
    pub fn add_pem(&mut self, pem: &[u8]) -> Result<(), KeyError> {
        provider::install();
        let mut found = 0;
        for public in rkube_certs::jose::pem_public_keys(pem)? {
            let Ok(rsa) = public.rsa() else {
                return Err(KeyError("only RSA keys are supported (RS256)".into()));
            };
            let der = rsa.public_key_to_der_pkcs1().map_err(|e| KeyError(e.to_string()))?;
            self.keys.push((rkube_certs::jose::key_id(&public)?, DecodingKey::from_rsa_der(&der)));
            found += 1;
        }
        if found == 0 {
            return Err(KeyError("no PEM key found".into()));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The keys with this id; all of them without one.
    fn candidates<'a>(&'a self, kid: Option<&'a str>) -> impl Iterator<Item = &'a DecodingKey> {
        self.keys.iter().filter(move |(id, _)| kid.is_none_or(|k| k == id)).map(|(_, key)| key)
    }
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Not a JWT from one of our issuers: some other authenticator's, or garbage.
    NotOurs,
    /// One of ours, and invalid for this reason.
    Invalid(String),
}

/// A token whose signature, issuer, audience and times are good.
#[derive(Clone, Debug)]
pub struct Verified {
    pub claims: Claims,
    /// The token's audiences that the request was for.
    pub audiences: Vec<String>,
}

/// Checks what a token carries, without looking anything up.
pub struct Verifier {
    pub issuers: Vec<String>,
    /// The API server's own audiences: those of a token without `aud`, and those a request
    /// is for unless it says otherwise (TokenReview's `spec.audiences`).
    pub implicit_audiences: Vec<String>,
    pub keys: PublicKeys,
}

impl Verifier {
    /// Upstream's JWT authenticator: the issuer (read before the signature), the signature
    /// with the key of the token's `kid` (any key without one), the issuer again, the
    /// audiences against `requested` (default the implicit ones), then the times.
    pub fn verify(
        &self,
        token: &str,
        requested: Option<&[String]>,
        now: i64,
    ) -> Result<Verified, Rejection> {
        if !self.has_our_issuer(token) {
            return Err(Rejection::NotOurs);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| Rejection::NotOurs)?;
        let mut validation = Validation::new(Algorithm::RS256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let mut errors = Vec::new();
        let mut claims = None;
        let mut any_key = false;
        for key in self.keys.candidates(header.kid.as_deref()) {
            any_key = true;
            match jsonwebtoken::decode::<Claims>(token, key, &validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        if !any_key {
            return Err(Rejection::Invalid("invalid signature, no keys found".into()));
        }
        let Some(claims) = claims else {
            return Err(Rejection::Invalid(errors.join(", ")));
        };
        if !self.issuers.contains(&claims.iss) {
            return Err(Rejection::Invalid(format!("token issuer {:?} is invalid", claims.iss)));
        }
        let token_audiences = if claims.aud.is_empty() {
            self.implicit_audiences.clone()
        } else {
            claims.aud.clone()
        };
        let requested = requested.unwrap_or(&self.implicit_audiences);
        let audiences: Vec<String> =
            token_audiences.iter().filter(|a| requested.contains(a)).cloned().collect();
        if audiences.is_empty() && !self.implicit_audiences.is_empty() {
            return Err(Rejection::Invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&token_audiences),
                go_quoted(requested)
            )));
        }
        claims.check_time(now).map_err(Rejection::Invalid)?;
        Ok(Verified { claims, audiences })
    }

    /// Whether the (unverified) payload names one of our issuers: cheap, and how upstream
    /// tells its tokens from other authenticators'.
    fn has_our_issuer(&self, token: &str) -> bool {
        if token.trim_start().starts_with('{') {
            return false;
        }
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return false;
        }
        let Ok(payload) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(parts[1]) else {
            return false;
        };
        #[derive(Deserialize)]
        struct Issuer {
            #[serde(default)]
            iss: String,
        }
        serde_json::from_slice::<Issuer>(&payload).is_ok_and(|i| self.issuers.contains(&i.iss))
    }
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// The kinds a token names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    ServiceAccount,
    Pod,
    Secret,
    Node,
}

impl ObjectKind {
    /// The core/v1 resource.
    pub fn plural(self) -> &'static str {
        match self {
            ObjectKind::ServiceAccount => "serviceaccounts",
            ObjectKind::Pod => "pods",
            ObjectKind::Secret => "secrets",
            ObjectKind::Node => "nodes",
        }
    }
}

/// What validation needs of an object that exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveObject {
    pub uid: String,
    /// `metadata.deletionTimestamp` (Unix seconds), when it is being deleted.
    pub deletion: Option<i64>,
}

impl LiveObject {
    /// From an object's JSON.
    pub fn of(obj: &serde_json::Value) -> LiveObject {
        let meta = &obj["metadata"];
        LiveObject {
            uid: meta["uid"].as_str().unwrap_or("").to_string(),
            deletion: meta["deletionTimestamp"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.timestamp()),
        }
    }
}

/// Reads the objects a token names.
pub trait ObjectGetter {
    /// `Ok(None)` when the object does not exist; `Err` when it cannot be read.
    fn get(
        &self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<LiveObject>, String>> + Send;
}

/// Who a valid token speaks for (upstream's `ServiceAccountInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccountInfo {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub pod_name: String,
    pub pod_uid: String,
    pub node_name: String,
    pub node_uid: String,
    pub credential_id: String,
}

impl ServiceAccountInfo {
    /// `system:serviceaccount:NS:NAME` in `system:serviceaccounts`,
    /// `system:serviceaccounts:NS` and `system:authenticated`, with the pod, node and
    /// credential id as upstream's `extra`.
    pub fn user(&self) -> UserInfo {
        let mut user = UserInfo::authenticated(
            username(&self.namespace, &self.name),
            vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{}", self.namespace),
            ],
        );
        user.uid = self.uid.clone();
        let mut extra = BTreeMap::new();
        if !self.pod_name.is_empty() && !self.pod_uid.is_empty() {
            extra.insert(
                "authentication.kubernetes.io/pod-name".into(),
                vec![self.pod_name.clone()],
            );
            extra.insert("authentication.kubernetes.io/pod-uid".into(), vec![self.pod_uid.clone()]);
        }
        if !self.credential_id.is_empty() {
            extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![self.credential_id.clone()],
            );
        }
        if !self.node_name.is_empty() {
            extra.insert(
                "authentication.kubernetes.io/node-name".into(),
                vec![self.node_name.clone()],
            );
            if !self.node_uid.is_empty() {
                extra.insert(
                    "authentication.kubernetes.io/node-uid".into(),
                    vec![self.node_uid.clone()],
                );
            }
        }
        user.extra = extra;
        user
    }
}

/// Upstream's validator: the service account still exists with the token's uid, and so does
/// the object the token is bound to (a pod, a secret, or a node); something deleted more than
/// [`LEEWAY_SECONDS`] ago counts as gone. Messages as upstream's.
pub async fn validate_objects<G: ObjectGetter>(
    getter: &G,
    claims: &Claims,
    now: i64,
) -> Result<ServiceAccountInfo, String> {
    let k = &claims.kubernetes;
    let namespace = k.namespace.as_str();
    let deleted_before = now - LEEWAY_SECONDS;
    let gone = |o: &LiveObject| o.deletion.is_some_and(|t| t < deleted_before);
    let sa = &k.serviceaccount;
    let account = getter
        .get(ObjectKind::ServiceAccount, namespace, &sa.name)
        .await?
        .ok_or_else(|| format!("serviceaccounts {:?} not found", sa.name))?;
    if account.uid != sa.uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({})",
            account.uid, sa.uid
        ));
    }
    if gone(&account) {
        return Err(format!("service account {namespace}/{} has been deleted", sa.name));
    }
    const INVALIDATED: &str = "service account token has been invalidated";
    if let Some(secret) = &k.secret {
        let live = getter.get(ObjectKind::Secret, namespace, &secret.name).await;
        let live = live.ok().flatten().ok_or(INVALIDATED)?;
        if live.uid != secret.uid {
            return Err(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                live.uid, secret.uid
            ));
        }
        if gone(&live) {
            return Err(INVALIDATED.into());
        }
    }
    let mut info = ServiceAccountInfo {
        namespace: namespace.to_string(),
        name: sa.name.clone(),
        uid: sa.uid.clone(),
        credential_id: if claims.jti.is_empty() {
            String::new()
        } else {
            format!("JTI={}", claims.jti)
        },
        ..Default::default()
    };
    if let Some(pod) = &k.pod {
        let live = getter.get(ObjectKind::Pod, namespace, &pod.name).await;
        let live = live.ok().flatten().ok_or(INVALIDATED)?;
        if live.uid != pod.uid {
            return Err(format!(
                "pod UID ({}) does not match service account pod ref claim ({})",
                live.uid, pod.uid
            ));
        }
        if gone(&live) {
            return Err(INVALIDATED.into());
        }
        info.pod_name = pod.name.clone();
        info.pod_uid = pod.uid.clone();
    }
    if let Some(node) = &k.node {
        if k.pod.is_none() {
            // A token bound to the node itself: the node must still be there.
            let live = getter.get(ObjectKind::Node, "", &node.name).await;
            let live = live.ok().flatten().ok_or(INVALIDATED)?;
            if live.uid != node.uid {
                return Err(format!(
                    "node UID ({}) does not match service account node ref claim ({})",
                    live.uid, node.uid
                ));
            }
            if gone(&live) {
                return Err(INVALIDATED.into());
            }
        }
        // For a pod's token the node is information only.
        info.node_name = node.name.clone();
        info.node_uid = node.uid.clone();
    }
    Ok(info)
}

/// jsonwebtoken's RSA operations are openssl's (the provider is shared with the token
/// controller, which signs legacy tokens).
use rkube_certs::jose as provider;

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::pkey::PKey;
    use std::collections::HashMap;

    const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
    const NOW: i64 = 1_800_000_000;

    fn rsa_pems() -> (Vec<u8>, Vec<u8>) {
        let rsa = openssl::rsa::Rsa::generate(2048).unwrap();
        let key = PKey::from_rsa(rsa).unwrap();
        (key.private_key_to_pem_pkcs8().unwrap(), key.public_key_to_pem().unwrap())
    }

    fn keys() -> &'static (Vec<u8>, Vec<u8>) {
        static KEYS: std::sync::OnceLock<(Vec<u8>, Vec<u8>)> = std::sync::OnceLock::new();
        KEYS.get_or_init(rsa_pems)
    }

    fn verifier() -> Verifier {
        let mut public = PublicKeys::default();
        public.add_pem(&keys().1).unwrap();
        Verifier {
            issuers: vec![ISSUER.to_string()],
            implicit_audiences: vec![ISSUER.to_string()],
            keys: public,
        }
    }

    fn spec(binding: Binding) -> TokenSpec {
        TokenSpec {
            namespace: "default".into(),
            service_account: ObjectRef::new("bot", "sa-uid"),
            audiences: vec![ISSUER.to_string()],
            now: NOW,
            expiration_seconds: 3600,
            warn_after_seconds: 0,
            binding,
        }
    }

    fn token(claims: &Claims) -> String {
        SigningKey::from_pem(&keys().0).unwrap().sign(claims).unwrap()
    }

    fn payload(token: &str) -> serde_json::Value {
        let part = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn tokens_carry_upstreams_claims_and_header() {
        let pod = Binding::Pod {
            pod: ObjectRef::new("web", "pod-uid"),
            node: Some(ObjectRef::new("n1", "node-uid")),
        };
        let mut s = spec(pod);
        s.warn_after_seconds = 3607;
        let t = token(&Claims::new(ISSUER, &s));
        let header: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(t.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "RS256");
        assert_eq!(header["kid"], SigningKey::from_pem(&keys().0).unwrap().key_id());
        assert!(header.get("typ").is_none());
        let p = payload(&t);
        let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["aud", "exp", "iat", "iss", "jti", "kubernetes.io", "nbf", "sub"]);
        assert_eq!(p["aud"], serde_json::json!([ISSUER]));
        assert_eq!(p["sub"], "system:serviceaccount:default:bot");
        assert_eq!(p["exp"], NOW + 3600);
        assert_eq!(p["iat"], NOW);
        assert_eq!(p["nbf"], NOW);
        assert_eq!(p["jti"].as_str().unwrap().len(), 36);
        assert_eq!(
            p["kubernetes.io"],
            serde_json::json!({
                "namespace": "default",
                "node": {"name": "n1", "uid": "node-uid"},
                "pod": {"name": "web", "uid": "pod-uid"},
                "serviceaccount": {"name": "bot", "uid": "sa-uid"},
                "warnafter": NOW + 3607,
            })
        );
    }

    #[test]
    fn a_good_token_verifies_and_bad_ones_do_not() {
        let v = verifier();
        let claims = Claims::new(ISSUER, &spec(Binding::None));
        let verified = v.verify(&token(&claims), None, NOW + 10).unwrap();
        assert_eq!(verified.claims, claims);
        assert_eq!(verified.audiences, [ISSUER]);

        // Expired (past the leeway), not yet valid, issued in the future.
        let expired = v.verify(&token(&claims), None, NOW + 3600 + LEEWAY_SECONDS + 1);
        assert_eq!(
            expired.unwrap_err(),
            Rejection::Invalid("service account token has expired".into())
        );
        assert!(v.verify(&token(&claims), None, NOW + 3600 + LEEWAY_SECONDS).is_ok());
        let early = v.verify(&token(&claims), None, NOW - LEEWAY_SECONDS - 1);
        assert_eq!(
            early.unwrap_err(),
            Rejection::Invalid("service account token is not valid yet".into())
        );

        // Another audience than the API server's.
        let mut other = spec(Binding::None);
        other.audiences = vec!["vault".into()];
        let t = token(&Claims::new(ISSUER, &other));
        assert_eq!(
            v.verify(&t, None, NOW).unwrap_err(),
            Rejection::Invalid(format!(
                "token audiences [\"vault\"] is invalid for the target audiences [\"{ISSUER}\"]"
            ))
        );
        // ... which a TokenReview for that audience accepts.
        let vault = ["vault".to_string()];
        assert_eq!(v.verify(&t, Some(&vault), NOW).unwrap().audiences, ["vault"]);

        // Another issuer: not ours at all.
        let foreign = token(&Claims::new("https://elsewhere", &spec(Binding::None)));
        assert_eq!(v.verify(&foreign, None, NOW).unwrap_err(), Rejection::NotOurs);
        assert_eq!(v.verify("garbage", None, NOW).unwrap_err(), Rejection::NotOurs);

        // Signed with another key, or tampered with.
        let (other_key, _) = rsa_pems();
        let forged = SigningKey::from_pem(&other_key).unwrap().sign(&claims).unwrap();
        assert!(matches!(v.verify(&forged, None, NOW), Err(Rejection::Invalid(_))));
        let mut parts: Vec<String> = token(&claims).split('.').map(String::from).collect();
        let mut changed = claims.clone();
        changed.kubernetes.serviceaccount.name = "admin".into();
        parts[1] = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(&changed).unwrap());
        assert!(matches!(v.verify(&parts.join("."), None, NOW), Err(Rejection::Invalid(_))));
        // An unsigned token (alg none) is refused.
        let none = format!(
            "{}.{}.",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
            parts[1]
        );
        assert!(v.verify(&none, None, NOW).is_err());
    }

    #[test]
    fn audiences_may_be_one_string() {
        let claims: Claims = serde_json::from_str(r#"{"aud":"x","exp":1.5,"iss":"i"}"#).unwrap();
        assert_eq!(claims.aud, ["x"]);
        assert_eq!(claims.exp, Some(1));
    }

    #[derive(Default)]
    struct Objects(HashMap<(&'static str, String), LiveObject>);

    impl Objects {
        fn put(&mut self, kind: ObjectKind, name: &str, uid: &str) {
            self.0.insert(
                (kind.plural(), name.to_string()),
                LiveObject { uid: uid.into(), deletion: None },
            );
        }
    }

    impl ObjectGetter for Objects {
        async fn get(
            &self,
            kind: ObjectKind,
            _namespace: &str,
            name: &str,
        ) -> Result<Option<LiveObject>, String> {
            Ok(self.0.get(&(kind.plural(), name.to_string())).cloned())
        }
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    #[test]
    fn bound_objects_must_still_exist_with_their_uids() {
        let mut objects = Objects::default();
        objects.put(ObjectKind::ServiceAccount, "bot", "sa-uid");
        objects.put(ObjectKind::Pod, "web", "pod-uid");
        let bound = Claims::new(
            ISSUER,
            &spec(Binding::Pod {
                pod: ObjectRef::new("web", "pod-uid"),
                node: Some(ObjectRef::new("n1", "node-uid")),
            }),
        );
        let info = block_on(validate_objects(&objects, &bound, NOW)).unwrap();
        let user = info.user();
        assert_eq!(user.name, "system:serviceaccount:default:bot");
        assert_eq!(user.uid, "sa-uid");
        assert_eq!(
            user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
        );
        assert_eq!(user.extra["authentication.kubernetes.io/pod-name"], ["web"]);
        assert_eq!(user.extra["authentication.kubernetes.io/node-uid"], ["node-uid"]);
        assert_eq!(
            user.extra["authentication.kubernetes.io/credential-id"],
            [format!("JTI={}", bound.jti)]
        );

        // The pod deleted (and made again under the same name).
        objects.put(ObjectKind::Pod, "web", "other-uid");
        let err = block_on(validate_objects(&objects, &bound, NOW)).unwrap_err();
        assert_eq!(
            err,
            "pod UID (other-uid) does not match service account pod ref claim (pod-uid)"
        );
        objects.0.remove(&("pods", "web".to_string()));
        let err = block_on(validate_objects(&objects, &bound, NOW)).unwrap_err();
        assert_eq!(err, "service account token has been invalidated");
        // Being deleted: still valid within the leeway, not after.
        objects.0.insert(
            ("pods", "web".into()),
            LiveObject { uid: "pod-uid".into(), deletion: Some(NOW) },
        );
        assert!(block_on(validate_objects(&objects, &bound, NOW + 30)).is_ok());
        assert!(block_on(validate_objects(&objects, &bound, NOW + LEEWAY_SECONDS + 1)).is_err());

        // The service account gone, or made again.
        let plain = Claims::new(ISSUER, &spec(Binding::None));
        objects.put(ObjectKind::ServiceAccount, "bot", "new-uid");
        let err = block_on(validate_objects(&objects, &plain, NOW)).unwrap_err();
        assert_eq!(err, "service account UID (new-uid) does not match claim (sa-uid)");
        objects.0.clear();
        let err = block_on(validate_objects(&objects, &plain, NOW)).unwrap_err();
        assert_eq!(err, "serviceaccounts \"bot\" not found");

        // Bound to a secret, or to a node.
        objects.put(ObjectKind::ServiceAccount, "bot", "sa-uid");
        let secret = Claims::new(ISSUER, &spec(Binding::Secret(ObjectRef::new("s", "s-uid"))));
        assert!(block_on(validate_objects(&objects, &secret, NOW)).is_err());
        objects.put(ObjectKind::Secret, "s", "s-uid");
        assert!(block_on(validate_objects(&objects, &secret, NOW)).is_ok());
        let node = Claims::new(ISSUER, &spec(Binding::Node(ObjectRef::new("n1", "n-uid"))));
        assert!(block_on(validate_objects(&objects, &node, NOW)).is_err());
        objects.put(ObjectKind::Node, "n1", "n-uid");
        let info = block_on(validate_objects(&objects, &node, NOW)).unwrap();
        assert_eq!(info.node_name, "n1");
        assert!(info.pod_name.is_empty());
    }
}
