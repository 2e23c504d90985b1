#!/usr/bin/env python3
"""Kubernetes JSON schemas for kubeconform, without the network: taken from the PyPI wheel of kubernetes-validate.

kubeconform reads one self-contained ("standalone") schema per kind, normally downloaded from GitHub; CI reaches
package registries only. The kubernetes-validate wheel (PyPI, Apache-2.0) ships the schemas of each Kubernetes
version, but with references into a shared `/api/_definitions.json`. For each kind the manifests use, this writes
the kind's schema with the definitions it reaches copied in under `$defs` and its references made local, in the
layout kubeconform's `-schema-location` template expects:

    OUT/v<version>-standalone-strict/<kind>[-<group>]-<version>.json

usage: kube-schemas.py WHEEL K8S_VERSION OUT MANIFEST.yaml...
"""

import json
import os
import re
import sys
import zipfile

REF = "/api/_definitions.json#/$defs/"


def kinds(manifests):
    """(kind, apiVersion) of every document, from the top-level `kind:` and `apiVersion:` lines."""
    found = set()
    for path in manifests:
        with open(path) as f:
            for doc in re.split(r"^---\s*$", f.read(), flags=re.M):
                kind = re.search(r"^kind:\s*(\S+)", doc, re.M)
                api = re.search(r"^apiVersion:\s*(\S+)", doc, re.M)
                if kind and api:
                    found.add((kind.group(1), api.group(1)))
    return sorted(found)


def file_name(kind, api_version):
    """kubeconform's name: deployment-apps-v1.json, service-v1.json."""
    if "/" in api_version:
        group, version = api_version.split("/")
        return f"{kind.lower()}-{group.split('.')[0]}-{version}.json"
    return f"{kind.lower()}-{api_version}.json"


def localize(node, reached):
    """Rewrites the shared references to local ones, collecting the names they point at."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith((REF, "#/$defs/")):
            name = ref.split("#/$defs/", 1)[1]
            reached.add(name)
            node["$ref"] = "#/$defs/" + name
        for value in node.values():
            localize(value, reached)
    elif isinstance(node, list):
        for value in node:
            localize(value, reached)


def main():
    wheel, version, out, manifests = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    version = version.lstrip("v")
    source = f"kubernetes_validate/kubernetes-json-schema/v{version}-local-strict/"
    target = os.path.join(out, f"v{version}-standalone-strict")
    os.makedirs(target, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        definitions = json.loads(z.read(source + "_definitions.json"))["$defs"]
        for kind, api_version in kinds(manifests):
            name = file_name(kind, api_version)
            try:
                schema = json.loads(z.read(source + name))
            except KeyError:
                sys.exit(f"no schema for {kind} {api_version} in Kubernetes {version} ({name})")
            reached, done, defs = set(), set(), {}
            localize(schema, reached)
            while reached - done:
                for def_name in sorted(reached - done):
                    done.add(def_name)
                    body = json.loads(json.dumps(definitions[def_name]))
                    localize(body, reached)
                    defs[def_name] = body
            schema["$defs"] = defs
            with open(os.path.join(target, name), "w") as f:
                json.dump(schema, f)
            print(f"{kind} {api_version}: {name}, {len(defs)} definitions")


if __name__ == "__main__":
    main()
