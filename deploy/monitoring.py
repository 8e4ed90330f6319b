"""Splits the rendered k8s/monitoring for deploy/validate.sh (issue 13).

    monitoring.py split RENDERED OUT CRD_DIR

- objects of Kubernetes' own kinds go to OUT/core-N.yaml (for kubernetes-validate);
- objects of the Prometheus Operator's kinds go to OUT/crd-N.json, each with the JSON schema
  of its kind's CRD (CRD_DIR/monitoring.coreos.com_<plural>.yaml) as OUT/schema-N.json,
  made strict: an object may not carry a field its schema does not name (the API server would
  prune it silently, so a misspelt field would simply be lost);
- the PrometheusRule's groups go to OUT/rules.yaml, a rule file for promtool.
"""
import json
import os
import sys

import yaml

OPERATOR_GROUP = "monitoring.coreos.com/"


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


def crd_schema(crd_dir, kind, version):
    path = os.path.join(crd_dir, f"monitoring.coreos.com_{kind.lower()}s.yaml")
    if not os.path.exists(path):
        sys.exit(f"no CRD for {kind} in {crd_dir}")
    with open(path) as file:
        crd = yaml.safe_load(file)
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            return strict(served["schema"]["openAPIV3Schema"])
    sys.exit(f"the CRD of {kind} serves no {version}")


def split(rendered, out, crd_dir):
    os.makedirs(out, exist_ok=True)
    with open(rendered) as file:
        objects = [o for o in yaml.safe_load_all(file) if o]
    rules = None
    for index, obj in enumerate(objects):
        api_version, kind = obj["apiVersion"], obj["kind"]
        if api_version.startswith(OPERATOR_GROUP):
            with open(os.path.join(out, f"crd-{index}.json"), "w") as file:
                json.dump(obj, file)
            schema = crd_schema(crd_dir, kind, api_version.split("/")[1])
            with open(os.path.join(out, f"schema-{index}.json"), "w") as file:
                json.dump(schema, file)
            if kind == "PrometheusRule":
                if rules is not None:
                    sys.exit("k8s/monitoring has more than one PrometheusRule")
                rules = obj["spec"]
        else:
            with open(os.path.join(out, f"core-{index}.yaml"), "w") as file:
                yaml.safe_dump(obj, file)
    if rules is None:
        sys.exit("k8s/monitoring has no PrometheusRule")
    with open(os.path.join(out, "rules.yaml"), "w") as file:
        yaml.safe_dump(rules, file)
    print(f"k8s/monitoring: {len(objects)} objects, {sum(len(g['rules']) for g in rules['groups'])} alert rules")


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "split":
        sys.exit(__doc__)
    split(*sys.argv[2:])
