#!/usr/bin/env python3
"""Writes apis/data/patch-schema.json, the patch-schema digest rkube compiles in.

Reads an upstream OpenAPI v2 document (kube-apiserver's /openapi/v2) and keeps only what a
strategic merge patch and server-side apply need:

  kinds        "apiVersion/Kind" (e.g. "v1/Pod", "apps/v1/Deployment") -> definition name,
               from each definition's x-kubernetes-group-version-kind.
  definitions  struct definition name (one with `properties`) -> {property -> entry}, where
               an entry has
                 "type"         the definition the property's value refers to (for arrays: the
                                items' definition; for maps: "map:" + the values' type),
                 "strategy"     x-kubernetes-patch-strategy, e.g. "merge" or "merge,retainKeys",
                 "mergeKey"     x-kubernetes-patch-merge-key,
                 "listType"     x-kubernetes-list-type (atomic, set or map),
                 "listMapKeys"  x-kubernetes-list-map-keys,
                 "mapType"      x-kubernetes-map-type (atomic or granular).
  mapTypes     definition name -> its own x-kubernetes-map-type (e.g. LabelSelector: atomic).

Every struct definition is kept, even one whose properties carry nothing: server-side apply
must tell a struct (whose keys are fields) from a map (whose keys are entries). Definitions
without properties (Quantity, Time, IntOrString, RawExtension...) are dropped: their values
are scalars or free-form. A property is kept when it carries any of the metadata above or
leads to a kept definition; descriptions and everything else are dropped.

The digest answers every strategic-merge-patch and server-side-apply question exactly as the
full document does (apis/tests/patch_schema.rs checks this). Usage, from the repository root:

  python3 apis/tools/gen-patch-schema.py ../shared/reference/kubernetes-openapi-v2.json \
      > apis/data/patch-schema.json
"""

import json
import sys

REF_PREFIX = "#/definitions/"

# Property extensions kept, and their keys in the digest.
EXTENSIONS = [
    ("x-kubernetes-patch-strategy", "strategy"),
    ("x-kubernetes-patch-merge-key", "mergeKey"),
    ("x-kubernetes-list-type", "listType"),
    ("x-kubernetes-list-map-keys", "listMapKeys"),
    ("x-kubernetes-map-type", "mapType"),
]


def ref_name(ref):
    if not ref.startswith(REF_PREFIX):
        raise SystemExit(f"unexpected $ref {ref!r}")
    return ref[len(REF_PREFIX):]


def value_type(schema):
    """The definition a property's value leads to, or None for primitives and lists of lists."""
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    if schema.get("type") == "array":
        items = schema.get("items") or {}
        if items.get("type") == "array":
            return None
        return value_type(items)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        inner = value_type(extra)
        return "map:" + inner if inner else None
    return None


def full_entries(definitions):
    """Every property of every struct with a value type or metadata, before pruning."""
    result = {}
    for name, definition in definitions.items():
        if not isinstance(definition.get("properties"), dict):
            continue
        entries = {}
        for prop, schema in definition["properties"].items():
            entry = {}
            target = value_type(schema)
            if target:
                entry["type"] = target
            for extension, key in EXTENSIONS:
                if extension in schema:
                    entry[key] = schema[extension]
            if entry:
                entries[prop] = entry
        result[name] = entries
    return result


def base_definition(type_ref):
    while type_ref.startswith("map:"):
        type_ref = type_ref[len("map:"):]
    return type_ref


def pruned(entries):
    """Drops the properties that carry nothing and lead to no struct."""
    result = {}
    for name in sorted(entries):
        props = {}
        for prop, entry in sorted(entries[name].items()):
            kept = {k: v for k, v in entry.items() if k != "type"}
            if "type" in entry and base_definition(entry["type"]) in entries:
                kept["type"] = entry["type"]
            if kept:
                props[prop] = kept
        result[name] = props
    return result


def map_types(definitions):
    return {
        name: definition["x-kubernetes-map-type"]
        for name, definition in sorted(definitions.items())
        if "x-kubernetes-map-type" in definition
    }


def kinds(definitions):
    result = {}
    for name in sorted(definitions):
        for gvk in definitions[name].get("x-kubernetes-group-version-kind") or []:
            group, version = gvk.get("group", ""), gvk["version"]
            api_version = f"{group}/{version}" if group else version
            key = f"{api_version}/{gvk['kind']}"
            if key in result and result[key] != name:
                print(f"warning: {key} claimed by {result[key]} and {name}", file=sys.stderr)
                continue
            result[key] = name
    return result


def dump(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def render(kind_map, definitions, definition_map_types):
    lines = ["{", '"kinds":{']
    kind_items = sorted(kind_map.items())
    for i, (key, name) in enumerate(kind_items):
        comma = "," if i + 1 < len(kind_items) else ""
        lines.append(f"{dump(key)}:{dump(name)}{comma}")
    lines.append("},")
    lines.append('"definitions":{')
    def_items = sorted(definitions.items())
    for i, (name, props) in enumerate(def_items):
        comma = "," if i + 1 < len(def_items) else ""
        lines.append(f"{dump(name)}:{dump(props)}{comma}")
    lines.append("},")
    lines.append(f'"mapTypes":{dump(definition_map_types)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} OPENAPI_V2_JSON > patch-schema.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    definitions = document["definitions"]
    digest = pruned(full_entries(definitions))
    sys.stdout.write(render(kinds(definitions), digest, map_types(definitions)))


if __name__ == "__main__":
    main()
