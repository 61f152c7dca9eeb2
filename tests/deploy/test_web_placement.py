"""Issue 47, point 8, in the rendered manifests: web pods spread across nodes, and a
preStop pause that works on every Kubernetes the manifests support (the ``sleep`` action
needs 1.30; the review validated them for 1.29 and later)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.deploy.kustomize_lite import build
from tests.deploy.support import DEPLOY
from tests.deploy.test_kubernetes import OVERLAY, by_kind, pod_specs


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return build(OVERLAY)


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def test_no_two_web_pods_share_a_node_while_another_node_has_none(rendered):
    web = by_kind(rendered, "Deployment")["memgov-web"]["spec"]["template"]
    labels = web["metadata"]["labels"]

    [by_node] = [
        c
        for c in web["spec"]["topologySpreadConstraints"]
        if c["topologyKey"] == "kubernetes.io/hostname"
    ]

    assert by_node["maxSkew"] == 1
    assert by_node["whenUnsatisfiable"] == "DoNotSchedule"  # a rule, not a preference
    assert by_node["nodeTaintsPolicy"] == "Honor"  # a tainted control plane is no domain
    assert by_node["matchLabelKeys"] == ["pod-template-hash"]  # rollouts are not blocked
    assert _selects(by_node["labelSelector"], labels)
    assert by_kind(rendered, "HorizontalPodAutoscaler")["memgov-web"]["spec"]["minReplicas"] > 1


def test_the_pre_stop_pause_runs_the_image_s_sleep_not_the_1_30_sleep_action(rendered):
    [web] = pod_specs(rendered)["memgov-web"]["containers"]
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")

    assert "sleep" not in web["lifecycle"]["preStop"]
    assert web["lifecycle"]["preStop"]["exec"]["command"] == ["sleep", "5"]
    # /bin/sleep is there: a Debian-based Python image, not a distroless one.
    assert re.search(r"^FROM python:[\d.]+-slim", dockerfile, flags=re.MULTILINE)
