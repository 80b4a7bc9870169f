//! Kubernetes' authorizer library: the `authorizer` variable of admission policies, which
//! asks the API server's authorizer about the requesting user:
//! `authorizer.group('apps').resource('deployments').namespace('ns').name('web').check('update')`
//! gives a decision with `allowed()`, `reason()`, `errored()` and `error()`;
//! `authorizer.serviceAccount(ns, name)` asks about a service account instead, and
//! `authorizer.path('/healthz').check('get')` about a non-resource path.

use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, Value};

use super::{ok, ok_opaque, opaque, opaque_type, string, Out};

/// Who is asked about: the requesting user, or a service account.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Principal {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

/// One question: may the principal do `verb` on this resource or path?
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// Set for a non-resource question (`authorizer.path(...)`).
    pub path: Option<String>,
}

/// What the authorizer answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(String),
    Deny(String),
    NoOpinion(String),
    /// The authorizer could not decide.
    Error(String),
}

/// The server's authorizer as policies see it.
pub trait Authorizer: Send + Sync {
    fn authorize(&self, principal: &Principal, attributes: &ResourceAttributes) -> Decision;
}

/// The `authorizer` variable, and each step of a question built from it.
#[derive(Clone)]
pub struct AuthorizerValue {
    authorizer: Arc<dyn Authorizer>,
    principal: Arc<Principal>,
    attributes: ResourceAttributes,
}

impl AuthorizerValue {
    /// The authorizer for questions about `principal`.
    pub fn new(authorizer: Arc<dyn Authorizer>, principal: Principal) -> AuthorizerValue {
        AuthorizerValue {
            authorizer,
            principal: Arc::new(principal),
            attributes: ResourceAttributes::default(),
        }
    }
}

impl std::fmt::Debug for AuthorizerValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("attributes", &self.attributes).finish()
    }
}

impl PartialEq for AuthorizerValue {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.principal, &other.principal) && self.attributes == other.attributes
    }
}

impl Eq for AuthorizerValue {}

impl Opaque for AuthorizerValue {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// A decision as a CEL value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelDecision(pub Decision);

impl Opaque for CelDecision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let a = || opaque_type("kubernetes.authorization.Authorizer");
    let d = || opaque_type("kubernetes.authorization.Decision");
    for (name, f) in [
        ("group", group as cel::common::functions::Function),
        ("resource", resource),
        ("subresource", subresource),
        ("namespace", namespace),
        ("name", name),
        ("path", path),
        ("check", check),
    ] {
        env.add_member_overload(name, &format!("authorizer_{name}"), a(), vec![STRING_TYPE], f)?;
    }
    env.add_member_overload(
        "serviceAccount",
        "authorizer_service_account",
        a(),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload("allowed", "decision_allowed", d(), vec![], allowed)?;
    env.add_member_overload("reason", "decision_reason", d(), vec![], reason)?;
    env.add_member_overload("errored", "decision_errored", d(), vec![], errored)?;
    env.add_member_overload("error", "decision_error", d(), vec![], error)?;
    Ok(())
}

/// The question so far, with one more attribute set.
fn with<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    set: fn(&mut ResourceAttributes, String),
) -> Out<'b, 'v> {
    let mut a = opaque::<AuthorizerValue>(&args[0])?;
    set(&mut a.attributes, string(&args[1])?.to_string());
    ok_opaque(a)
}

fn group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.group = v)
}
fn resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.resource = v)
}
fn subresource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.subresource = v)
}
fn namespace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.namespace = v)
}
fn name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.name = v)
}
fn path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    with(args, |a, v| a.path = Some(v))
}

fn check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let a = opaque::<AuthorizerValue>(&args[0])?;
    let mut attributes = a.attributes.clone();
    attributes.verb = string(&args[1])?.to_string();
    ok_opaque(CelDecision(a.authorizer.authorize(&a.principal, &attributes)))
}

fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let a = opaque::<AuthorizerValue>(&args[0])?;
    let (ns, name) = (string(&args[1])?, string(&args[2])?);
    let principal = Principal {
        name: format!("system:serviceaccount:{ns}:{name}"),
        uid: String::new(),
        groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{ns}")],
    };
    ok_opaque(AuthorizerValue { principal: Arc::new(principal), ..a })
}

fn decision(args: &[CowVal<'_, '_>]) -> Result<Decision, cel::ExecutionError> {
    opaque::<CelDecision>(&args[0]).map(|d| d.0)
}

fn allowed<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(matches!(decision(&args)?, Decision::Allow(_))))
}

fn reason<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let text = match decision(&args)? {
        Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        Decision::Error(_) => String::new(),
    };
    ok(Value::String(Arc::new(text)))
}

fn errored<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(matches!(decision(&args)?, Decision::Error(_))))
}

fn error<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let text = match decision(&args)? {
        Decision::Error(e) => e,
        _ => String::new(),
    };
    ok(Value::String(Arc::new(text)))
}
