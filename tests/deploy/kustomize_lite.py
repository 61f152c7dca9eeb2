"""``kustomize build`` for the features deploy/k8s uses, in Python: the tests render the
manifests with it on machines without the kustomize binary, and compare it with
``kubectl kustomize`` where that exists.

Supported: ``resources`` (files and directories), ``namespace``, ``labels`` (metadata
only), ``images`` (newName/newTag), ``replicas``, strategic-merge ``patches`` by file
(maps merge, lists of named items merge by name, other lists are replaced) and
``nameSuffix`` over Jobs only (nothing refers to a Job by name, so no reference needs
renaming). Anything
else in a kustomization is refused, so the renderer cannot silently drift."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN = {
    *("apiVersion", "kind", "resources", "namespace", "labels", "images", "replicas"),
    *("patches", "nameSuffix"),
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PersistentVolume"}


def build(directory: Path) -> list[dict[str, Any]]:
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(spec) - KNOWN
    if unknown:
        raise ValueError(f"{directory}: kustomize_lite does not support {sorted(unknown)}")
    resources: list[dict[str, Any]] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        if path.is_dir():
            resources += build(path)
        else:
            resources += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    if "nameSuffix" in spec:
        if {r["kind"] for r in resources} != {"Job"}:
            raise ValueError("kustomize_lite applies nameSuffix to Jobs only")
        for resource in resources:
            resource["metadata"]["name"] += spec["nameSuffix"]
    for patch in spec.get("patches", []):
        _patch(resources, yaml.safe_load((directory / patch["path"]).read_text(encoding="utf-8")))
    for rule in spec.get("labels", []):
        if rule.get("includeSelectors") or rule.get("includeTemplates"):
            raise ValueError("kustomize_lite applies labels to metadata only")
        for resource in resources:
            resource["metadata"].setdefault("labels", {}).update(rule["pairs"])
    for image in spec.get("images", []):
        for container in _containers(resources):
            if container["image"].split(":")[0] == image["name"]:
                container["image"] = f"{image.get('newName', image['name'])}:{image['newTag']}"
    for rule in spec.get("replicas", []):
        [target] = [r for r in resources if r["metadata"]["name"] == rule["name"]]
        target["spec"]["replicas"] = rule["count"]
    if "namespace" in spec:
        for resource in resources:
            if resource["kind"] not in CLUSTER_SCOPED:
                resource["metadata"]["namespace"] = spec["namespace"]
    return resources


def _containers(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for resource in resources:
        pod = resource.get("spec", {}).get("template", {}).get("spec", {})
        found += pod.get("initContainers", []) + pod.get("containers", [])
    return found


def _patch(resources: list[dict[str, Any]], patch: dict[str, Any]) -> None:
    key = (patch["kind"], patch["metadata"]["name"])
    [target] = [r for r in resources if (r["kind"], r["metadata"]["name"]) == key]
    merged = _merge(target, patch)
    target.clear()
    target.update(merged)


def _merge(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for name, value in patch.items():
            out[name] = _merge(base[name], value) if name in base else copy.deepcopy(value)
        return out
    named = isinstance(base, list) and all(isinstance(i, dict) and "name" in i for i in base)
    if named and isinstance(patch, list):
        items = copy.deepcopy(base)
        for item in patch:
            index = next((i for i, b in enumerate(items) if b["name"] == item["name"]), None)
            if index is None:
                items.append(copy.deepcopy(item))
            else:
                items[index] = _merge(items[index], item)
        return items
    return copy.deepcopy(patch)
