"""indexes/ imports without a circle (lazy imports inside functions count too).

On the tree before the backend kinds were registered once, this found the seven-module circle
registry -> declared.factories -> declared.spec -> declared.http -> ... -> registry.
"""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

from tests.test_layers import graph


def test_indexes_has_no_import_circle():
    modules = graph(("indexes",))
    try:
        tuple(TopologicalSorter({m: deps & modules.keys() for m, deps in modules.items()}).static_order())
    except CycleError as exc:
        raise AssertionError(f"import circle: {' -> '.join(exc.args[1])}") from None

