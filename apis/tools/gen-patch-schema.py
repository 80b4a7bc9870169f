#!/usr/bin/env python3
"""Writes apis/data/patch-schema.json, the strategic-merge-patch digest rkube compiles in.

Reads an upstream OpenAPI v2 document (kube-apiserver's /openapi/v2) and keeps only what a
strategic merge patch needs:

  kinds        "apiVersion/Kind" (e.g. "v1/Pod", "apps/v1/Deployment") -> definition name,
               from each definition's x-kubernetes-group-version-kind.
  definitions  definition name -> {property -> entry}, where an entry has
                 "type"      the definition the property's value refers to (for arrays: the
                             items' definition; for maps: "map:" + the values' type),
                 "strategy"  x-kubernetes-patch-strategy, e.g. "merge" or "merge,retainKeys",
                 "mergeKey"  x-kubernetes-patch-merge-key.
               Only properties that carry patch metadata, or that lead to a definition that
               does, are kept; descriptions and everything else are dropped.

The digest answers every strategic-merge-patch question exactly as the full document does
(apis/tests/patch_schema.rs checks this). Usage, from the repository root:

  python3 apis/tools/gen-patch-schema.py ../shared/reference/kubernetes-openapi-v2.json \
      > apis/data/patch-schema.json
"""

import json
import sys

REF_PREFIX = "#/definitions/"


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
    """Every property with a value type or patch metadata, before pruning."""
    result = {}
    for name, definition in definitions.items():
        entries = {}
        for prop, schema in (definition.get("properties") or {}).items():
            entry = {}
            target = value_type(schema)
            if target:
                entry["type"] = target
            if "x-kubernetes-patch-strategy" in schema:
                entry["strategy"] = schema["x-kubernetes-patch-strategy"]
            if "x-kubernetes-patch-merge-key" in schema:
                entry["mergeKey"] = schema["x-kubernetes-patch-merge-key"]
            if entry:
                entries[prop] = entry
        result[name] = entries
    return result


def base_definition(type_ref):
    while type_ref.startswith("map:"):
        type_ref = type_ref[len("map:"):]
    return type_ref


def interesting_definitions(entries):
    """Definitions that carry patch metadata themselves or through a property's type."""
    interesting = set()
    changed = True
    while changed:
        changed = False
        for name, props in entries.items():
            if name in interesting:
                continue
            for entry in props.values():
                if "strategy" in entry or "mergeKey" in entry or (
                    "type" in entry and base_definition(entry["type"]) in interesting
                ):
                    interesting.add(name)
                    changed = True
                    break
    return interesting


def pruned(entries, interesting):
    result = {}
    for name in sorted(interesting):
        props = {}
        for prop, entry in sorted(entries[name].items()):
            kept = {k: v for k, v in entry.items() if k != "type"}
            if "type" in entry and base_definition(entry["type"]) in interesting:
                kept["type"] = entry["type"]
            if kept:
                props[prop] = kept
        result[name] = props
    return result


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


def render(kind_map, definitions):
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
    lines.append("}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: {sys.argv[0]} OPENAPI_V2_JSON > patch-schema.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        document = json.load(f)
    definitions = document["definitions"]
    entries = full_entries(definitions)
    digest = pruned(entries, interesting_definitions(entries))
    sys.stdout.write(render(kinds(definitions), digest))


if __name__ == "__main__":
    main()
