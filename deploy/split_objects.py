"""Splits rendered manifests for deploy/validate.sh by who can check each object.

    split_objects.py RENDERED OUT CRD_DIR...

- objects of Kubernetes' own kinds go to OUT/core-N.yaml (for kubernetes-validate);
- objects of a kind some CRD_DIR defines (`<group>_<plural>.yaml`: the Prometheus Operator's,
  KEDA's) go to OUT/crd-N.json, each with the JSON schema of its kind's CRD as
  OUT/schema-N.json, made strict: an object may not carry a field its schema does not name
  (the API server would prune it silently, so a misspelt field would simply be lost);
- a PrometheusRule's groups (at most one) go to OUT/rules.yaml, a rule file for promtool.
"""
import json
import os
import sys

import yaml


def strict(schema):
    """Forbids fields the schema does not name, wherever it names some; patterns in Python's
    dialect (CRDs use Go's, whose inline flags may follow `^`)."""
    if isinstance(schema, dict):
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and pattern.startswith("^(?i)"):
            schema["pattern"] = "(?i)^" + pattern[len("^(?i)"):]
        if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            schema.setdefault("additionalProperties", False)
        for value in schema.values():
            strict(value)
    elif isinstance(schema, list):
        for value in schema:
            strict(value)
    return schema


def crd_of(crd_dirs, api_version, kind):
    """The CRD that defines `kind` in `api_version`'s group, or None (a kind of Kubernetes)."""
    if "/" not in api_version:
        return None
    group = api_version.split("/")[0]
    for crd_dir in crd_dirs:
        path = os.path.join(crd_dir, f"{group}_{kind.lower()}s.yaml")
        if os.path.exists(path):
            with open(path) as file:
                return yaml.safe_load(file)
    return None


def schema_of(crd, kind, version):
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return strict(served["schema"]["openAPIV3Schema"])
    sys.exit(f"the CRD of {kind} serves no {version}")


def split(rendered, out, *crd_dirs):
    os.makedirs(out, exist_ok=True)
    with open(rendered) as file:
        objects = [o for o in yaml.safe_load_all(file) if o]
    rules = None
    custom = 0
    for index, obj in enumerate(objects):
        api_version, kind = obj["apiVersion"], obj["kind"]
        crd = crd_of(crd_dirs, api_version, kind)
        if crd is None:
            with open(os.path.join(out, f"core-{index}.yaml"), "w") as file:
                yaml.safe_dump(obj, file)
            continue
        custom += 1
        with open(os.path.join(out, f"crd-{index}.json"), "w") as file:
            json.dump(obj, file)
        with open(os.path.join(out, f"schema-{index}.json"), "w") as file:
            json.dump(schema_of(crd, kind, api_version.split("/")[1]), file)
        if kind == "PrometheusRule":
            if rules is not None:
                sys.exit(f"{rendered} has more than one PrometheusRule")
            rules = obj["spec"]
    if rules is not None:
        with open(os.path.join(out, "rules.yaml"), "w") as file:
            yaml.safe_dump(rules, file)
    print(f"{len(objects)} objects, {custom} of custom kinds")


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[1] != "split":
        sys.exit(__doc__)
    split(*sys.argv[2:])
