#!/usr/bin/env python3
"""Writes apis/data/proto-schema.json, the protobuf wire schema rkube compiles in.

kubectl sends built-in objects in the Kubernetes protobuf encoding; rkube keeps objects as JSON.
`rkube_apis::protobuf` transcodes between the two, driven by this digest. It is built from two
crates.io packages found in the local cargo registry ($CARGO_HOME or ~/.cargo):

  k8s-pb 0.9.0       prost structs for every Kubernetes message: field tags, wire kinds,
                     message types, maps, repeated fields, and `impl Resource` (apiVersion, kind).
  k8s-openapi 0.29.0 the same types with their JSON names (the serde `"podIP" => Key_pod_ip`
                     tables), the upstream definition names, which fields are required (not
                     `Option`), and (v1_33) the kinds kube-apiserver 1.33 serves. k8s-pb follows
                     a newer release: fields only newer k8s-openapi versions know are left out,
                     so that their tags are skipped as unknown, as kube-apiserver 1.33 does.

The digest (no docs, no descriptions):

  kinds      "apiVersion/Kind" -> message, for every kind 1.33 serves and its List.
  metaKinds  Kind -> message for the meta/v1 kinds every group version accepts (DeleteOptions,
             Status, ...).
  messages   fully qualified proto name -> either {"special": how} for the types whose JSON form
             is not a plain object (Time, Quantity, IntOrString, ...), or {"fields": [...]} with
             one [tag, jsonName, kind, flags] per field, in declaration (= Go struct) order.
             kind: string | bool | int32 | int64 | bytes | double | float | enum | <message>
                   | map<string,<kind>>
             flags: "r" repeated, "q" required (not Option in k8s-openapi), "z" a zero value
                    ("", false, 0) read from the wire is dropped, as Go's omitempty would,
                    "i" an embedded Go struct (`json:",inline"`): a nested message on the
                    wire whose fields sit in the parent's JSON object.

Only messages reachable from a kind are kept. What was left out, and the fields whose JSON name
could not be taken from k8s-openapi (named by a camelCase guess), are listed on stderr. Usage,
from the repository root:

  python3 apis/tools/gen-proto-schema.py > apis/data/proto-schema.json
"""

import glob
import json
import os
import re
import sys

PB_CRATE = "k8s-pb-0.9.0"
OPENAPI_CRATE = "k8s-openapi-0.29.0"
OPENAPI_VERSIONS = ["v1_33", "v1_34", "v1_35", "v1_36", "v1_37"]

# Messages whose JSON form is not an object of their fields (how upstream marshals them).
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "microtime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "duration",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "fieldsv1",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "rawextension",
}
for _v in ("v1", "v1beta1"):
    _p = f"k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.{_v}."
    SPECIAL[_p + "JSON"] = "json"
    SPECIAL[_p + "JSONSchemaPropsOrArray"] = "orarray"
    SPECIAL[_p + "JSONSchemaPropsOrBool"] = "orbool"
    SPECIAL[_p + "JSONSchemaPropsOrStringArray"] = "orstringarray"

# Kinds of meta/v1 that every group version registers.
META_KINDS = [
    "APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "CreateOptions",
    "DeleteOptions", "GetOptions", "List", "ListOptions", "PartialObjectMetadata",
    "PartialObjectMetadataList", "PatchOptions", "Status", "UpdateOptions", "WatchEvent",
]

# Zero values. go-to-protobuf writes every non-pointer Go field, also when zero; Go's JSON drops
# zero values of `omitempty` fields but keeps those of pointer fields. Neither crate says which
# Go fields are pointers, so:
#  - optional strings: "" is dropped (plain `string` is by far the common case, and rkube's
#    defaulting treats an absent field as unset), except the pointer fields below where "" means
#    something of its own;
#  - optional bools and integers: kept (dropping a pointer's false/0 would change meaning, e.g.
#    automountServiceAccountToken: false, replicas: 0, runAsUser: 0), except the plain Go
#    fields below that kubectl writes as false/0 when unset.
KEEP_EMPTY_STRING = {
    ("api.core.v1.PersistentVolumeClaimSpec", "storageClassName"),
    ("api.core.v1.PersistentVolumeClaimSpec", "volumeAttributesClassName"),
}
# Plain (non-pointer) bool/int fields with omitempty, per message, in API versions rkube serves.
_PLAIN_POD_SPEC = {"hostNetwork", "hostPID", "hostIPC"}
_PLAIN_CONTAINER = {"stdin", "stdinOnce", "tty"}
_PLAIN_PROBE = {"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"}
_PLAIN_READONLY = {"readOnly"}
DROP_ZERO = {
    "apimachinery.pkg.apis.meta.v1.ObjectMeta": {"generation"},
    "api.core.v1.PodSpec": _PLAIN_POD_SPEC,
    "api.core.v1.Container": _PLAIN_CONTAINER,
    "api.core.v1.EphemeralContainerCommon": _PLAIN_CONTAINER,
    "api.core.v1.Probe": _PLAIN_PROBE,
    "api.core.v1.ContainerPort": {"hostPort"},
    "api.core.v1.ServicePort": {"nodePort"},
    "api.core.v1.ServiceSpec": {"publishNotReadyAddresses", "healthCheckNodePort"},
    "api.core.v1.VolumeMount": _PLAIN_READONLY,
    "api.core.v1.NodeSpec": {"unschedulable"},
    "api.core.v1.ReplicationControllerSpec": {"minReadySeconds"},
    "api.core.v1.ReplicationControllerStatus": {
        "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"},
    "api.core.v1.AWSElasticBlockStoreVolumeSource": {"partition", "readOnly"},
    "api.core.v1.GCEPersistentDiskVolumeSource": {"partition", "readOnly"},
    "api.core.v1.ISCSIVolumeSource": {"readOnly", "chapAuthDiscovery", "chapAuthSession"},
    "api.core.v1.ISCSIPersistentVolumeSource": {"readOnly", "chapAuthDiscovery",
                                                "chapAuthSession"},
    "api.core.v1.NFSVolumeSource": _PLAIN_READONLY,
    "api.core.v1.RBDVolumeSource": _PLAIN_READONLY,
    "api.core.v1.RBDPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.CephFSVolumeSource": _PLAIN_READONLY,
    "api.core.v1.CephFSPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.CinderVolumeSource": _PLAIN_READONLY,
    "api.core.v1.CinderPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.FCVolumeSource": _PLAIN_READONLY,
    "api.core.v1.FlexVolumeSource": _PLAIN_READONLY,
    "api.core.v1.FlexPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.AzureFileVolumeSource": _PLAIN_READONLY,
    "api.core.v1.AzureFilePersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.PortworxVolumeSource": _PLAIN_READONLY,
    "api.core.v1.QuobyteVolumeSource": _PLAIN_READONLY,
    "api.core.v1.ScaleIOVolumeSource": {"readOnly", "sslEnabled"},
    "api.core.v1.ScaleIOPersistentVolumeSource": {"readOnly", "sslEnabled"},
    "api.core.v1.StorageOSVolumeSource": _PLAIN_READONLY,
    "api.core.v1.StorageOSPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.GlusterfsVolumeSource": _PLAIN_READONLY,
    "api.core.v1.GlusterfsPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.PersistentVolumeClaimVolumeSource": _PLAIN_READONLY,
    "api.core.v1.CSIPersistentVolumeSource": _PLAIN_READONLY,
    "api.core.v1.ContainerImage": {"sizeBytes"},
    "api.core.v1.Event": {"count"},
    "api.core.v1.EventSeries": {"count"},
    "api.apps.v1.DeploymentSpec": {"minReadySeconds", "paused"},
    "api.apps.v1.DeploymentStatus": {
        "observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
        "availableReplicas", "unavailableReplicas"},
    "api.apps.v1.ReplicaSetSpec": {"minReadySeconds"},
    "api.apps.v1.ReplicaSetStatus": {
        "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"},
    "api.apps.v1.DaemonSetSpec": {"minReadySeconds"},
    "api.apps.v1.DaemonSetStatus": {"observedGeneration", "updatedNumberScheduled",
                                    "numberAvailable", "numberUnavailable"},
    "api.apps.v1.StatefulSetSpec": {"minReadySeconds"},
    "api.apps.v1.StatefulSetStatus": {
        "observedGeneration", "readyReplicas", "currentReplicas", "updatedReplicas"},
    "api.apps.v1.StatefulSetOrdinals": {"start"},
    "api.batch.v1.JobStatus": {"active", "succeeded", "failed"},
    "api.autoscaling.v2.HorizontalPodAutoscalerStatus": {"currentReplicas"},
    "api.authentication.v1.TokenReviewStatus": {"authenticated"},
    "api.admissionregistration.v1.ValidatingAdmissionPolicyStatus": {"observedGeneration"},
    "api.core.v1.ContainerStateTerminated": {"signal"},
    "api.core.v1.PodCondition": {"observedGeneration"},
    "api.core.v1.PodStatus": {"observedGeneration"},
    "api.core.v1.VolumeMountStatus": _PLAIN_READONLY,
    "api.networking.v1.ServiceBackendPort": {"number"},
    "api.flowcontrol.v1.FlowSchemaSpec": {"matchingPrecedence"},
    "api.flowcontrol.v1.QueuingConfiguration": {"queues", "handSize", "queueLengthLimit"},
    "api.flowcontrol.v1.ResourcePolicyRule": {"clusterScope"},
    "api.scheduling.v1.PriorityClass": {"globalDefault"},
    "api.authorization.v1.SubjectAccessReviewStatus": {"denied"},
    "api.events.v1.Event": {"deprecatedCount"},
    "api.policy.v1.PodDisruptionBudgetStatus": {"observedGeneration"},
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps": {
        "exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "nullable",
        "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string"},
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec": {
        "preserveUnknownFields"},
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion": {
        "deprecated"},
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition": {
        "priority"},
    "kube_aggregator.pkg.apis.apiregistration.v1.APIServiceSpec": {"insecureSkipTLSVerify"},
}

SCALARS = {"string", "bool", "int32", "int64", "uint32", "uint64", "sint32", "sint64",
           "fixed32", "fixed64", "sfixed32", "sfixed64", "bytes", "double", "float"}


def warn(msg):
    print(msg, file=sys.stderr)


def find_crate(name):
    homes = []
    if os.environ.get("CARGO_HOME"):
        homes.append(os.environ["CARGO_HOME"])
    homes.append(os.path.expanduser("~/.cargo"))
    for home in homes:
        hits = sorted(glob.glob(os.path.join(home, "registry", "src", "*", name)))
        if hits:
            return hits[0]
    raise SystemExit(f"crate {name} not found under $CARGO_HOME or ~/.cargo/registry/src/*/; "
                     f"run `cargo fetch` in the workspace first")


def norm(name):
    """A name reduced to lowercase letters and digits: pod_ip, podIP and r#type all compare."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


# ---------------------------------------------------------------------------------------------
# k8s-pb

def split_top(text, sep=","):
    parts, depth, quoted, cur = [], 0, False, ""
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def strip_wrappers(ty):
    """Option<Box<X>> / Vec<X> / Box<X> -> X."""
    ty = ty.strip()
    while True:
        m = re.match(r"^(?:::core::option::Option|::prost::alloc::vec::Vec|"
                     r"::prost::alloc::boxed::Box|Option|Vec|Box)<(.*)>$", ty)
        if not m:
            return ty
        ty = m.group(1).strip()


def resolve(path, module):
    """A Rust type path as written in module `module` -> (module path, type name)."""
    segs = [s for s in path.replace(" ", "").split("::") if s]
    mod = list(module)
    if segs and segs[0] == "crate":
        mod = []
        segs = segs[1:]
    while segs and segs[0] == "super":
        mod = mod[:-1]
        segs = segs[1:]
    return tuple(mod + segs[:-1]), segs[-1]


def parse_pb(root):
    """-> messages {(module, RustName): [field]}, resources [(module, RustName, apiVersion, kind)]"""
    messages, resources = {}, []
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "mod.rs"), recursive=True)):
        rel = os.path.relpath(os.path.dirname(path), os.path.join(root, "src"))
        module = tuple(rel.split(os.sep))
        lines = open(path, encoding="utf-8").read().split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            m = re.match(r"^pub struct (\w+) \{(\})?$", line)
            if m:
                name, fields = m.group(1), []
                messages[(module, name)] = fields
                if m.group(2):
                    i += 1
                    continue
                i += 1
                attr = None
                while lines[i] != "}":
                    s = lines[i].strip()
                    if s.startswith("#[prost("):
                        attr = s[len("#[prost("):-2]
                    elif s.startswith("pub ") and attr is not None:
                        decl = s
                        while not decl.endswith(",") or decl.count("<") != decl.count(">"):
                            i += 1
                            decl += lines[i].strip()
                        fname, ty = re.sub(r",\s*>", ">", decl[4:-1]).split(":", 1)
                        fields.append(parse_pb_field(attr, fname.strip(), ty.strip(), module))
                        attr = None
                    i += 1
                i += 1
                continue
            m = re.match(r"^impl crate::Resource for (\w+) \{$", line)
            if m:
                consts = {}
                i += 1
                while lines[i] != "}":
                    c = re.match(r'\s*const (\w+): &\'static str = "(.*)";', lines[i])
                    if c:
                        consts[c.group(1)] = c.group(2)
                    i += 1
                resources.append((module, m.group(1), consts["API_VERSION"], consts["KIND"]))
            i += 1
    return messages, resources


def parse_pb_field(attr, rust_name, ty, module):
    items = split_top(attr)
    tag = None
    kind = None
    label = "optional"
    map_spec = None
    for item in items:
        if item.startswith("tag"):
            tag = int(item.split("=")[1].strip().strip('"'))
        elif item in ("optional", "repeated", "required"):
            label = item
        elif item.startswith("btree_map") or item.startswith("hash_map") or item.startswith(
                "map"):
            map_spec = item.split("=", 1)[1].strip().strip('"')
        elif item.startswith("enumeration"):
            kind = "enum"
        elif item.split("=")[0].strip() in SCALARS or item == "message":
            kind = item.split("=")[0].strip()
    field = {"rust": rust_name.replace("r#", ""), "tag": tag, "repeated": label == "repeated"}
    if map_spec:
        key, value = [s.strip() for s in map_spec.split(",")]
        field["map_key"] = key
        if value == "message":
            generic = re.search(r"BTreeMap<(.*)>\s*$", ty.replace("\n", ""))
            args = split_top(generic.group(1))
            field["kind"] = ("msg", resolve(strip_wrappers(args[1]), module))
        elif value.startswith("enumeration"):
            field["kind"] = "enum"
        else:
            field["kind"] = value
    elif kind == "message":
        field["kind"] = ("msg", resolve(strip_wrappers(ty), module))
    else:
        field["kind"] = kind
    if tag is None or field["kind"] is None:
        raise SystemExit(f"cannot read prost field {rust_name} in {'::'.join(module)}: {attr}")
    return field


# ---------------------------------------------------------------------------------------------
# k8s-openapi

def parse_openapi(root, version):
    """-> {(module, lowercased name): {"definition", "fields": {rust: (json, required)}}}"""
    out = {}
    base = os.path.join(root, "src", version)
    for path in sorted(glob.glob(os.path.join(base, "**", "*.rs"), recursive=True)):
        if os.path.basename(path) == "mod.rs":
            continue
        text = open(path, encoding="utf-8").read()
        d = re.match(r"// Generated from definition (\S+)", text)
        s = re.search(r"^pub (?:struct|enum) (\w+)", text, re.M)
        if not d or not s:
            continue
        rel = os.path.relpath(os.path.dirname(path), base)
        module = tuple(rel.split(os.sep)) if rel != "." else ()
        fields = {}
        body = re.search(r"^pub struct \w+(?:<[^>]*>)?(?: where [^{]*)? \{\n(.*?)^\}", text,
                         re.M | re.S)
        if body:
            for fm in re.finditer(r"^    pub (\w+): (.*),$", body.group(1), re.M):
                required = not fm.group(2).startswith("Option<")
                fields[fm.group(1)] = [None, required]
        for jm in re.finditer(r'^\s*"([^"]+)" => Field::Key_(\w+),$', text, re.M):
            if jm.group(2) in fields:
                fields[jm.group(2)][0] = jm.group(1)
        out[(module, s.group(1).lower())] = {
            "definition": d.group(1), "name": s.group(1), "fields": fields,
            "resource": openapi_resource(text)}
    return out


def openapi_resource(text):
    m = re.search(r"impl crate::Resource for \w+ \{(.*?)\n\}", text, re.S)
    if not m:
        return None
    consts = dict(re.findall(r'const (\w+): &\'static str = "(.*)";', m.group(1)))
    if "API_VERSION" not in consts or "KIND" not in consts:
        return None
    return consts["API_VERSION"], consts["KIND"]


# ---------------------------------------------------------------------------------------------

def camel(rust):
    head, *rest = rust.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def main():
    pb_root = find_crate(PB_CRATE)
    oa_root = find_crate(OPENAPI_CRATE)
    pb_messages, pb_resources = parse_pb(pb_root)
    openapi = [(v, parse_openapi(oa_root, v)) for v in OPENAPI_VERSIONS]
    list_fields = {"items": ("items", True), "metadata": ("metadata", True)}

    def openapi_struct(key):
        module, rust_name = key
        for version, structs in openapi:
            hit = structs.get((module, rust_name.lower()))
            if hit:
                yield version, hit

    # Proto names: the k8s-pb module path is the proto package; the type name is upstream's
    # (k8s-openapi's definition name), since prost re-cases acronyms (JsonSchemaProps).
    full_names = {}
    for key in pb_messages:
        module, rust_name = key
        name = rust_name
        for _, hit in openapi_struct(key):
            name = hit["definition"].rsplit(".", 1)[1]
            break
        full_names[key] = "k8s.io." + ".".join(module) + "." + name
    by_full = {v: k for k, v in full_names.items()}

    kinds, roots = {}, []

    def add_kind(api_version, kind, key):
        kinds[f"{api_version}/{kind}"] = full_names[key]
        roots.append(key)
        list_key = (key[0], key[1] + "List")
        if list_key in pb_messages:
            kinds[f"{api_version}/{kind}List"] = full_names[list_key]
            roots.append(list_key)

    # The kinds kube-apiserver 1.33 serves are k8s-openapi v1_33's resources; k8s-pb's
    # `impl Resource` names their messages (for Scale, Eviction, TokenRequest, ... k8s-pb has no
    # impl, and the message of the same module and name is taken).
    pb_by_kind = {(api_version, kind): (module, rust_name)
                  for module, rust_name, api_version, kind in pb_resources}
    for (module, _), hit in openapi[0][1].items():
        if hit["resource"] is None:
            continue
        api_version, kind = hit["resource"]
        key = pb_by_kind.get((api_version, kind)) or next(
            (k for k in pb_messages if k[0] == module and k[1].lower() == kind.lower()), None)
        if key is None:
            warn(f"no k8s-pb message for {api_version} {kind}; it cannot be transcoded")
            continue
        add_kind(api_version, kind, key)
    not_served = sorted(f"{a}/{k}" for a, k in pb_by_kind if f"{a}/{k}" not in kinds)
    meta_module = ("apimachinery", "pkg", "apis", "meta", "v1")
    meta_kinds = {}
    for kind in META_KINDS:
        key = (meta_module, kind) if (meta_module, kind) in pb_messages else next(
            (k for k in pb_messages if k[0] == meta_module and k[1].lower() == kind.lower()), None)
        if key is None:
            warn(f"no meta/v1 message for {kind}")
            continue
        meta_kinds[kind] = full_names[key]
        roots.append(key)

    tables = {key: [(v, hit["fields"]) for v, hit in openapi_struct(key)] for key in pb_messages}
    inline = find_inline(pb_messages, tables)

    # The special types, also those no kind reaches yet (meta/v1 Duration).
    roots.extend(by_full[name] for name in SPECIAL if name in by_full)

    out_messages = {}
    unmapped = []
    newer = {}
    pending = list(roots)
    seen = set()
    while pending:
        key = pending.pop()
        if key in seen:
            continue
        seen.add(key)
        full = full_names[key]
        short = full[len("k8s.io."):]
        if full in SPECIAL:
            out_messages[full] = {"special": SPECIAL[full]}
            continue
        pb_fields = pb_messages[key]
        is_list = key[1].endswith("List") and {f["rust"] for f in pb_fields} == {"items",
                                                                                  "metadata"}
        # A named string slice (Verbs, ExtraValue): upstream marshals it as the bare array.
        if not tables[key] and len(pb_fields) == 1 and pb_fields[0]["rust"] == "items" and \
                pb_fields[0]["tag"] == 1 and pb_fields[0]["repeated"] and \
                pb_fields[0]["kind"] == "string":
            out_messages[full] = {"special": "stringarray"}
            continue
        fields = []
        for f in pb_fields:
            entry, source = lookup(tables[key], f["rust"])
            json_name, required = entry if entry else (None, False)
            if (key, f["rust"]) in inline:
                json_name, source = camel(f["rust"]), "inline"
            if json_name is None and is_list:
                json_name, required = list_fields[f["rust"]]
                source = "list"
            if json_name is None:
                json_name = camel(f["rust"])
                unmapped.append(f"{short}.{f['rust']} -> {json_name}")
            elif source not in ("v1_33", "list", "inline"):
                # Newer than 1.33: kube-apiserver 1.33 skips the tag as unknown, and so do we.
                newer.setdefault(source, []).append(f"{short}.{json_name}")
                continue
            kind = f["kind"]
            if isinstance(kind, tuple):
                target = kind[1]
                if target not in pb_messages:
                    raise SystemExit(f"{short}.{f['rust']}: unknown message {target}")
                pending.append(target)
                kind = full_names[target]
            if "map_key" in f:
                kind = f"map<{f['map_key']},{kind}>"
            flags = ""
            if f["repeated"]:
                flags += "r"
            if source == "inline":
                flags += "i"
            if required:
                flags += "q"
            if not f["repeated"] and "map_key" not in f and not required and drops_zero(
                    short, json_name, kind):
                flags += "z"
            entry = [f["tag"], json_name, kind]
            if flags:
                entry.append(flags)
            fields.append(entry)
        out_messages[full] = {"fields": fields}

    check_overrides(out_messages)
    digest = {
        "kinds": dict(sorted(kinds.items())),
        "metaKinds": dict(sorted(meta_kinds.items())),
        "messages": dict(sorted(out_messages.items())),
    }
    json.dump(digest, sys.stdout, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")

    skipped = sorted(full_names[k] for k in pb_messages if k not in seen)
    warn(f"{len(out_messages)} messages, {len(kinds)} kinds, {len(meta_kinds)} meta kinds; "
         f"{len(skipped)} k8s-pb messages not reachable from a kind were left out")
    warn(f"{len(not_served)} k8s-pb kinds that 1.33 does not serve were left out: "
         f"{', '.join(not_served)}")
    for version, names in sorted(newer.items()):
        warn(f"{len(names)} fields first named in k8s-openapi {version} were left out "
             f"(1.33 does not know them): {', '.join(sorted(names))}")
    if unmapped:
        warn(f"{len(unmapped)} fields without a k8s-openapi JSON name (camelCase guessed):")
        for line in sorted(unmapped):
            warn("  " + line)
    else:
        warn("every field was named from k8s-openapi")


def lookup(tables, rust):
    """The k8s-openapi (jsonName, required) of a prost field, and the version that named it."""
    for version, fields in tables:
        entry = fields.get(rust) or next(
            (e for e in fields.values() if e[0] is not None and norm(e[0]) == norm(rust)), None)
        if entry and entry[0]:
            return entry, version
    return None, None


def find_inline(pb_messages, tables):
    """Embedded Go structs (`json:",inline"`): on the wire a nested message (Volume.volumeSource,
    Probe.handler, ConfigMapKeySelector.localObjectReference), in JSON its fields sit in the
    parent. Such a field has no JSON name of its own, and its message's fields are all named by
    the parent's k8s-openapi struct; the message then borrows the parent's names."""

    def covered(host, child, depth=0):
        return depth < 8 and all(
            lookup(host, cf["rust"])[0] is not None or (
                isinstance(cf["kind"], tuple) and covered(host, cf["kind"][1], depth + 1))
            for cf in pb_messages[child])

    inline = set()
    changed = True
    while changed:
        changed = False
        for key, fields in pb_messages.items():
            if not tables[key]:
                continue
            for f in fields:
                if not isinstance(f["kind"], tuple) or f["repeated"] or "map_key" in f:
                    continue
                child = f["kind"][1]
                if (key, f["rust"]) in inline or lookup(tables[key], f["rust"])[0] is not None:
                    continue
                if pb_messages[child] and covered(tables[key], child):
                    inline.add((key, f["rust"]))
                    for table in tables[key]:
                        if table not in tables[child]:
                            tables[child].append(table)
                    changed = True
    return inline


def drops_zero(short, json_name, kind):
    if kind == "string":
        return (short, json_name) not in KEEP_EMPTY_STRING
    if kind in ("bool", "int32", "int64"):
        return json_name in DROP_ZERO.get(short, ())
    return False


def check_overrides(messages):
    """Every override names a field that exists, so that renames upstream are noticed."""
    fields = {}
    for full, msg in messages.items():
        for entry in msg.get("fields", []):
            fields[(full[len("k8s.io."):], entry[1])] = entry[2]
    for short, names in DROP_ZERO.items():
        for name in names:
            kind = fields.get((short, name))
            if kind not in ("bool", "int32", "int64"):
                warn(f"override {short}.{name}: no such bool/int field (found {kind})")
    for short, name in KEEP_EMPTY_STRING:
        if fields.get((short, name)) != "string":
            warn(f"override {short}.{name}: no such string field")


if __name__ == "__main__":
    main()
