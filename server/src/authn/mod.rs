//! Authentication by bearer token: service-account JWTs (the TokenRequest API's, bound or
//! not), as kube-apiserver's service-account token authenticator.
//!
//! [`authenticate`] is the layer: a request that the TLS listener did not already identify
//! by its client certificate and that carries `Authorization: Bearer <token>` is
//! authenticated here, or refused with `401 Unauthorized` as upstream does for a token no
//! authenticator accepts. [`ServiceAccountTokens`] holds the keys and the issuer settings
//! (`--service-account-*` flags); the JWT work is in [`jwt`]; the
//! `serviceaccounts/<name>/token` subresource that issues tokens is [`token_request`]; and
//! [`token_review`] answers `TokenReview`.
//!
//! Besides service-account tokens the layer accepts `--token-auth-file` tokens
//! ([`token_file`]) and bootstrap tokens ([`bootstrap`]), and refuses requests without
//! credentials when `--anonymous-auth=false` ([`AuthenticationOptions`]); a token none of them
//! knows goes to the token webhook when one is configured ([`token_webhook`]). Before all of
//! them, on the listener, a front proxy's certificate makes the user the one its headers
//! name ([`requestheader`]). After it,
//! [`impersonation`] swaps in an impersonated user; [`oidc_discovery`] serves the issuer's
//! discovery documents.

pub mod bootstrap;
pub mod impersonation;
pub mod jwt;
pub mod legacy;
pub mod oidc_discovery;
pub mod requestheader;
pub mod token_cache;
pub mod token_file;
pub mod token_request;
pub mod token_webhook;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::auth::UserInfo;
use crate::registry::Registry;
use crate::status::{ApiError, ApiResult};
use jwt::{LiveObject, ObjectGetter, ObjectKind, Rejection};

/// kube-apiserver's usual issuer (`--service-account-issuer`), as k3s and kubeadm set it.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// What `TokenRequest` defaults `spec.expirationSeconds` to.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

/// The expiration the service-account admission plugin gives projected tokens (one hour and
/// seven seconds): such pod-bound tokens are extended when `extend_expiration` is on.
pub const WARN_ONLY_EXPIRATION_SECONDS: i64 = 3607;

/// How long extended tokens live (a year).
pub const EXTENDED_EXPIRATION_SECONDS: i64 = 365 * 24 * 3600;

/// The service-account token settings, as kube-apiserver's flags.
#[derive(Clone, Debug)]
pub struct TokenOptions {
    /// `--service-account-issuer`: the first one is written into new tokens, all are accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences`: the audiences a token must have one of to reach this API; default
    /// the issuers.
    pub api_audiences: Vec<String>,
    /// `--service-account-signing-key-file`'s PEM.
    pub signing_key_pem: Vec<u8>,
    /// `--service-account-key-file`s' PEMs: the keys that verify tokens.
    pub verification_keys_pem: Vec<Vec<u8>>,
    /// `--service-account-max-token-expiration` in seconds; 0: no maximum.
    pub max_expiration_seconds: i64,
    /// `--service-account-extend-token-expiration`.
    pub extend_expiration: bool,
}

impl TokenOptions {
    /// Upstream's defaults with these keys.
    pub fn new(signing_key_pem: Vec<u8>, verification_keys_pem: Vec<Vec<u8>>) -> TokenOptions {
        TokenOptions {
            issuers: vec![DEFAULT_ISSUER.to_string()],
            api_audiences: Vec::new(),
            signing_key_pem,
            verification_keys_pem,
            max_expiration_seconds: 0,
            extend_expiration: true,
        }
    }
}

/// kube-apiserver's authentication flags other than the service-account ones.
#[derive(Clone, Debug)]
pub struct AuthenticationOptions {
    /// `--anonymous-auth`: requests without credentials are `system:anonymous`; false: 401.
    pub anonymous: bool,
    /// `--token-auth-file`, read.
    pub token_file: Option<token_file::TokenFile>,
    /// `--enable-bootstrap-token-auth`.
    pub bootstrap_tokens: bool,
    /// `--service-account-jwks-uri`: the `jwks_uri` of the discovery document.
    pub jwks_uri: Option<String>,
    /// `--authentication-token-webhook-config-file`: asked last ([`token_webhook`]).
    pub token_webhook: Option<Arc<token_webhook::TokenWebhook>>,
}

impl Default for AuthenticationOptions {
    /// kube-apiserver's defaults.
    fn default() -> Self {
        AuthenticationOptions {
            anonymous: true,
            token_file: None,
            bootstrap_tokens: false,
            jwks_uri: None,
            token_webhook: None,
        }
    }
}

/// Issues and checks service-account tokens.
pub struct ServiceAccountTokens {
    /// The issuer new tokens name.
    pub issuer: String,
    /// The API server's audiences (what a token without `spec.audiences` is for).
    pub api_audiences: Vec<String>,
    pub max_expiration_seconds: i64,
    pub extend_expiration: bool,
    pub max_extended_expiration_seconds: i64,
    signer: jwt::SigningKey,
    verifier: jwt::Verifier,
}

impl ServiceAccountTokens {
    /// Reads the keys and checks the settings as kube-apiserver does at startup.
    pub fn new(options: &TokenOptions) -> Result<ServiceAccountTokens, String> {
        let issuer = options
            .issuers
            .first()
            .filter(|i| !i.is_empty())
            .ok_or("--service-account-issuer must not be empty")?
            .clone();
        let max = options.max_expiration_seconds;
        if max != 0 && !(3600..=1i64 << 32).contains(&max) {
            return Err(
                "--service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
                    .into(),
            );
        }
        if max != 0 && options.extend_expiration && max < WARN_ONLY_EXPIRATION_SECONDS {
            return Err(format!(
                "--service-account-max-token-expiration must be at least {WARN_ONLY_EXPIRATION_SECONDS}s \
                 when --service-account-extend-token-expiration is true"
            ));
        }
        let signer = jwt::SigningKey::from_pem(&options.signing_key_pem)
            .map_err(|e| format!("service-account signing key: {e}"))?;
        let mut keys = jwt::PublicKeys::default();
        for pem in &options.verification_keys_pem {
            keys.add_pem(pem).map_err(|e| format!("service-account key file: {e}"))?;
        }
        if keys.is_empty() {
            keys.add_pem(&options.signing_key_pem)
                .map_err(|e| format!("service-account signing key: {e}"))?;
        }
        let api_audiences = if options.api_audiences.is_empty() {
            options.issuers.clone()
        } else {
            options.api_audiences.clone()
        };
        Ok(ServiceAccountTokens {
            issuer,
            api_audiences: api_audiences.clone(),
            max_expiration_seconds: max,
            extend_expiration: options.extend_expiration,
            max_extended_expiration_seconds: EXTENDED_EXPIRATION_SECONDS.max(max),
            signer,
            verifier: jwt::Verifier {
                // Legacy (Secret-based) tokens are accepted besides the configured issuers'.
                issuers: options
                    .issuers
                    .iter()
                    .cloned()
                    .chain([legacy::LEGACY_ISSUER.to_string()])
                    .collect(),
                implicit_audiences: api_audiences,
                keys,
            },
        })
    }

    /// Signs new claims.
    pub fn sign(&self, claims: &jwt::Claims) -> Result<String, String> {
        self.signer.sign(claims).map_err(|e| e.to_string())
    }

    /// The user a token speaks for and the audiences it was accepted for (the requested
    /// ones, default the API's). `Err(None)`: not a token of ours; `Err(Some(why))`: ours
    /// and invalid.
    pub async fn authenticate<G: ObjectGetter + legacy::SecretAccess>(
        &self,
        getter: &G,
        token: &str,
        audiences: Option<&[String]>,
    ) -> Result<(UserInfo, Vec<String>), Option<String>> {
        let now = chrono::Utc::now().timestamp();
        let verified = self.verifier.verify(token, audiences, now).map_err(|r| match r {
            Rejection::NotOurs => None,
            Rejection::Invalid(why) => Some(why),
        })?;
        let info = if verified.claims.iss == legacy::LEGACY_ISSUER {
            let claims = legacy::claims(token).map_err(Some)?;
            let today = chrono::Utc::now().date_naive();
            let tomorrow = today.succ_opt().unwrap_or(today);
            let (today, tomorrow) = (today.to_string(), tomorrow.to_string());
            legacy::validate(getter, token, &claims, &today, &tomorrow).await.map_err(Some)?
        } else {
            jwt::validate_objects(getter, &verified.claims, now).await.map_err(Some)?
        };
        Ok((info.user(), verified.audiences))
    }
}

/// Reads objects for token validation: from the watch cache (what upstream's informers
/// give), else from the store (an object made a moment ago may not be in the cache yet).
pub struct RegistryGetter<'a>(pub &'a Registry);

impl ObjectGetter for RegistryGetter<'_> {
    async fn get(
        &self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Result<Option<LiveObject>, String> {
        let registry = self.0;
        let info = rkube_apis::resources::Resources::builtin()
            .get("", "v1", kind.plural())
            .ok_or("unknown resource")?;
        let namespace = info.namespaced.then_some(namespace);
        if let Ok(cache) = registry.cache(info) {
            if let Some(obj) = cache.get(&info.key(namespace, name)) {
                return Ok(Some(LiveObject::of(&obj.value())));
            }
        }
        match registry.get(info, namespace, name).await {
            Ok(obj) => Ok(Some(LiveObject::of(&obj))),
            Err(e) if e.code == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(e.message),
        }
    }
}

impl legacy::SecretAccess for RegistryGetter<'_> {
    async fn token_secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<legacy::TokenSecret>, String> {
        let info = secrets();
        // The store, not the cache: the token must still be the Secret's at this moment.
        match self.0.get(info, Some(namespace), name).await {
            Ok(obj) => Ok(Some(legacy::TokenSecret::of(&obj))),
            Err(e) if e.code == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(e.message),
        }
    }

    async fn mark_used(&self, namespace: &str, name: &str, uid: &str, day: &str) {
        let label = |obj: &Value| {
            let mut obj = obj.clone();
            if obj["metadata"]["uid"].as_str() != Some(uid) {
                return Err(ApiError::new(StatusCode::CONFLICT, "Conflict", "uid changed"));
            }
            if !obj["metadata"]["labels"].is_object() {
                obj["metadata"]["labels"] = json!({});
            }
            obj["metadata"]["labels"][legacy::LAST_USED_LABEL] = json!(day);
            Ok(obj)
        };
        let options = crate::registry::WriteOptions::default();
        let written =
            self.0.modify(secrets(), Some(namespace), name, None, &options, None, label).await;
        if let Err(e) = written {
            tracing::warn!(
                namespace,
                name,
                error = e.message,
                "cannot label a legacy token's secret"
            );
        }
    }
}

fn secrets() -> &'static rkube_apis::resources::ResourceInfo {
    rkube_apis::resources::Resources::builtin().get("", "v1", "secrets").expect("core/v1 secrets")
}

impl bootstrap::SecretGetter for RegistryGetter<'_> {
    async fn secret(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<serde_json::Value>, String> {
        let registry = self.0;
        let info = secrets();
        if let Ok(cache) = registry.cache(info) {
            if let Some(obj) = cache.get(&info.key(Some(namespace), name)) {
                return Ok(Some(obj.value()));
            }
        }
        match registry.get(info, Some(namespace), name).await {
            Ok(obj) => Ok(Some(obj)),
            Err(e) if e.code == StatusCode::NOT_FOUND => Ok(None),
            Err(e) => Err(e.message),
        }
    }
}

/// The bearer token of a request, as upstream reads it: `Authorization: Bearer <token>`, or
/// for WebSockets (which cannot set headers from a browser) the
/// `base64url.bearer.authorization.k8s.io.<token>` subprotocol.
pub fn bearer_token(headers: &http::HeaderMap) -> Option<String> {
    if let Some(auth) = headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let mut parts = auth.trim().splitn(3, ' ');
        if let (Some(scheme), Some(token)) = (parts.next(), parts.next()) {
            if scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() {
                return Some(token.to_string());
            }
        }
    }
    const PREFIX: &str = "base64url.bearer.authorization.k8s.io.";
    let protocols = headers.get_all(http::header::SEC_WEBSOCKET_PROTOCOL);
    protocols
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|p| p.trim().strip_prefix(PREFIX))
        .find_map(|encoded| {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded).ok()?;
            String::from_utf8(bytes).ok().filter(|t| !t.is_empty())
        })
}

/// `401 Unauthorized`, as kube-apiserver answers a request whose credentials it refuses.
pub fn unauthorized() -> Response {
    ApiError::new(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized").into_response()
}

/// Left on a request of a front proxy's connection whose headers name no user: the
/// authentication layer refuses it.
#[derive(Clone, Copy, Debug)]
pub struct RequestHeaderRefused;

/// The 401 of a request whose credentials failed: audited, and answered once its body (up to
/// 64 KiB, for at most a second) has been read. An HTTP/2 request whose unread body is
/// dropped before the answer goes out is reset, and a client may see the reset rather than
/// the 401.
async fn refuse(state: &ApiState, request: Request) -> Response {
    state.auditor.failed_authentication(&request);
    let body = axum::body::to_bytes(request.into_body(), 64 * 1024);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), body).await;
    unauthorized()
}

/// The authentication layer (see the module doc): x509 first, then the bearer token
/// (token file, service-account token, bootstrap token), else anonymous if allowed.
pub async fn authenticate(
    State(state): State<Arc<ApiState>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.extensions().get::<RequestHeaderRefused>().is_some() {
        return refuse(&state, request).await;
    }
    let has_certificate = request.extensions().get::<UserInfo>().is_some_and(|u| !u.is_anonymous());
    if has_certificate {
        return next.run(request).await;
    }
    let Some(token) = bearer_token(request.headers()) else {
        if !state.authentication.anonymous {
            return refuse(&state, request).await;
        }
        return next.run(request).await;
    };
    match authenticate_token(&state, &token).await {
        Ok(user) => {
            // As upstream: the credential goes no further than authentication.
            request.headers_mut().remove(http::header::AUTHORIZATION);
            request.extensions_mut().insert(user);
            next.run(request).await
        }
        Err(why) => {
            tracing::info!(
                path = request.uri().path(),
                error = why,
                "Unable to authenticate the request"
            );
            refuse(&state, request).await
        }
    }
}

/// The user of a bearer token, asking the token authenticators in upstream's order.
async fn authenticate_token(state: &ApiState, token: &str) -> Result<UserInfo, String> {
    if let Some(user) = state.token_cache.get(token) {
        return Ok(user);
    }
    let user = verify_token(state, token).await?;
    state.token_cache.put(token, &user);
    Ok(user)
}

/// [`authenticate_token`] without the cache.
async fn verify_token(state: &ApiState, token: &str) -> Result<UserInfo, String> {
    let getter = RegistryGetter(&state.registry);
    let refused = match state.tokens.authenticate(&getter, token, None).await {
        Ok((user, _)) => return Ok(user),
        Err(why) => why,
    };
    let refused = match refused {
        Some(why) => why,
        None => match audience_agnostic(state, token).await {
            Some(Ok(user)) => return Ok(user),
            Some(Err(why)) => why,
            None => "invalid bearer token".to_string(),
        },
    };
    // The webhook comes last, and is asked whatever the others said (as upstream's union).
    match &state.authentication.token_webhook {
        Some(webhook) => {
            let audiences = &state.tokens.api_audiences;
            webhook.authenticate(token, audiences, audiences).await.map(|(user, _)| user)
        }
        None => Err(refused),
    }
}

/// The token file and bootstrap tokens, which name no audience (upstream wraps them to stand
/// for the API's audiences). `None`: neither knows the token.
async fn audience_agnostic(state: &ApiState, token: &str) -> Option<Result<UserInfo, String>> {
    let options = &state.authentication;
    if let Some(user) = options.token_file.as_ref().and_then(|f| f.authenticate(token)) {
        return Some(Ok(user));
    }
    if options.bootstrap_tokens {
        let getter = RegistryGetter(&state.registry);
        return match bootstrap::authenticate(&getter, token, chrono::Utc::now()).await {
            Ok(Some(user)) => Some(Ok(user)),
            Ok(None) => None,
            Err(why) => Some(Err(why.to_string())),
        };
    }
    None
}

/// `TokenReview`: whether a token authenticates, for whom, for which audiences.
pub async fn token_review(state: &ApiState, mut review: Value) -> ApiResult<Value> {
    let token = review["spec"]["token"].as_str().unwrap_or("").to_string();
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let requested: Vec<String> = review["spec"]["audiences"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
        .unwrap_or_default();
    let requested =
        if requested.is_empty() { state.tokens.api_audiences.clone() } else { requested };
    let getter = RegistryGetter(&state.registry);
    let mut result = state.tokens.authenticate(&getter, &token, Some(&requested)).await;
    if matches!(result, Err(None)) {
        // Audience-agnostic tokens stand for the API's audiences: accepted for a review
        // asking for one of them, with the ones it asked for.
        let audiences: Vec<String> =
            requested.iter().filter(|a| state.tokens.api_audiences.contains(a)).cloned().collect();
        if !audiences.is_empty() {
            if let Some(found) = audience_agnostic(state, &token).await {
                result = found.map(|user| (user, audiences)).map_err(Some);
            }
        }
    }
    if let (Err(_), Some(webhook)) = (&result, &state.authentication.token_webhook) {
        let answer = webhook.authenticate(&token, &requested, &state.tokens.api_audiences).await;
        if answer.is_ok() {
            result = answer.map_err(Some);
        }
    }
    let status = match result {
        Ok((user, audiences)) => {
            let mut info = json!({"username": user.name, "groups": user.groups});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({"authenticated": true, "user": info, "audiences": audiences})
        }
        Err(why) => json!({
            "user": {},
            "error": why.as_deref().unwrap_or("invalid bearer token"),
        }),
    };
    review["apiVersion"] = json!("authentication.k8s.io/v1");
    review["kind"] = json!("TokenReview");
    if !review["metadata"].is_object() {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = status;
    Ok(review)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_as_upstream() {
        let mut h = http::HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(http::header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&h).as_deref(), Some("abc"));
        h.insert(http::header::AUTHORIZATION, "  bearer abc extra".parse().unwrap());
        assert_eq!(bearer_token(&h).as_deref(), Some("abc"));
        h.insert(http::header::AUTHORIZATION, "Basic Zm9vOmJhcg==".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
        h.insert(http::header::AUTHORIZATION, "Bearer ".parse().unwrap());
        assert_eq!(bearer_token(&h), None);
        let mut ws = http::HeaderMap::new();
        ws.insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            "v5.channel.k8s.io, base64url.bearer.authorization.k8s.io.YWJj".parse().unwrap(),
        );
        assert_eq!(bearer_token(&ws).as_deref(), Some("abc"));
    }

    #[test]
    fn settings_are_checked_at_startup() {
        let key = openssl::rsa::Rsa::generate(2048).unwrap();
        let pem = openssl::pkey::PKey::from_rsa(key).unwrap().private_key_to_pem_pkcs8().unwrap();
        let tokens = ServiceAccountTokens::new(&TokenOptions::new(pem.clone(), vec![])).unwrap();
        assert_eq!(tokens.issuer, DEFAULT_ISSUER);
        assert_eq!(tokens.api_audiences, [DEFAULT_ISSUER]);
        assert_eq!(tokens.max_extended_expiration_seconds, EXTENDED_EXPIRATION_SECONDS);
        let mut options = TokenOptions::new(pem.clone(), vec![]);
        options.max_expiration_seconds = 600;
        assert!(ServiceAccountTokens::new(&options).is_err());
        options.max_expiration_seconds = 2 * 365 * 24 * 3600;
        let tokens = ServiceAccountTokens::new(&options).unwrap();
        assert_eq!(tokens.max_extended_expiration_seconds, 2 * 365 * 24 * 3600);
        assert!(ServiceAccountTokens::new(&TokenOptions::new(b"nope".to_vec(), vec![])).is_err());
    }
}
