"""Validates deploy/kubernetes/*.yaml: each built-in object against the Kubernetes API's schema
for the release given (strict: an unknown field is an error), each InferencePool against the
v1 schema of the Inference Extension's CRD (deploy/kubernetes/schemas/), and the YAML that
ConfigMaps carry (the endpoint picker's and prometheus-adapter's configs) as YAML. Exit 1 on
any error."""

import pathlib
import sys

import jsonschema
import kubernetes_validate
import yaml

DEPLOY = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
RELEASE = "1.37.0"


def crd_schemas():
    """{(apiVersion, kind): the CRD's openAPIV3Schema} of the vendored CRDs."""
    schemas = {}
    for path in sorted((DEPLOY / "schemas").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


def main():
    schemas = crd_schemas()
    errors, checked = [], 0
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            checked += 1
            where = f"{path.name}: {doc.get('kind')} {doc.get('metadata', {}).get('name')}"
            key = (doc.get("apiVersion"), doc.get("kind"))
            try:
                if key in schemas:
                    jsonschema.validate(doc, schemas[key])
                else:
                    kubernetes_validate.validate(doc, RELEASE, strict=True)
                if doc.get("kind") == "ConfigMap":
                    for name, text in doc.get("data", {}).items():
                        if name.endswith((".yaml", ".yml")):
                            assert isinstance(yaml.safe_load(text), dict), f"{name} is not a YAML mapping"
            except Exception as error:  # every validator's own error type
                errors.append(f"{where}: {str(error).splitlines()[0]}")
    for error in errors:
        print("error:", error)
    print(f"check-kubernetes: {checked} objects in deploy/kubernetes, Kubernetes {RELEASE} schemas"
          f" and the InferencePool CRD: {'ok' if not errors else f'{len(errors)} invalid'}")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
