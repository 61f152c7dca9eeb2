"""The layers hold: no module imports another in a circle (scripts/check_import_cycles.py,
also run by ``make lint``), and the checker does find a circle when there is one."""

from scripts.check_import_cycles import find_cycle, imports_of, project_modules


def test_the_checker_finds_a_circle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}

    assert find_cycle(graph) == ["a", "b", "c", "a"]


def test_a_layered_graph_has_no_circle():
    assert find_cycle({"api": {"memory", "core"}, "memory": {"core"}, "core": set()}) is None


def test_the_project_modules_import_each_other_in_no_circle():
    modules = project_modules()
    graph = {name: imports_of(path, modules) - {name} for name, path in modules.items()}

    assert "memory.lifecycle" in graph and "core.outbox" in graph["memory.effects"]
    assert find_cycle(graph) is None
