"""Schemathesis hooks for scripts/fuzz.py (loaded through SCHEMATHESIS_HOOKS): id path
parameters are drawn from the objects scripts/fuzz_seed.py created (the JSON file named
by FUZZ_FIXTURES), or left as generated, so id endpoints answer from real state (200,
403, 409, 422 …) as well as 404."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import strategies as st

_FIXTURES: dict[str, list[Any]] = (
    json.loads(Path(os.environ["FUZZ_FIXTURES"]).read_text())
    if os.environ.get("FUZZ_FIXTURES")
    else {}
)


@schemathesis.hook
def flatmap_path_parameters(
    ctx: schemathesis.HookContext, parameters: dict[str, Any] | None
) -> st.SearchStrategy[dict[str, Any] | None]:
    if not parameters:
        return st.just(parameters)
    drawn = {
        name: (st.sampled_from(_FIXTURES[name]) | st.just(value))
        if _FIXTURES.get(name)
        else st.just(value)
        for name, value in parameters.items()
    }
    return st.fixed_dictionaries(drawn)
