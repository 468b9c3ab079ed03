"""What the tests on Ray share: one local Ray for the folder, and a run evaluated here or on it."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest

from searchgrade.engine.ray.session import ray_session
from searchgrade.engine.ray.stage_runner import RayRunner
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store


@pytest.fixture(scope="package")
def local_ray():
    """One local Ray on 2 CPUs for the folder's tests (a run's connect() uses it and leaves it running)."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=100 * 1024**2,
             log_to_driver=False, configure_logging=False, namespace="searchgrade-tests")
    yield ray
    ray.shutdown()


def evaluate(where: str, collection, config: RunConfig, tmp_path: Path):
    """The run's store and outcome, evaluated into tmp_path/where: "local" here, "ray" on the folder's Ray."""
    store = Store(tmp_path / where)
    with ray_session(None) if where == "ray" else nullcontext() as session:
        runner = RayRunner(session) if session is not None else None
        return store, run_evaluation(collection, config, store, tmp_path / where, runner=runner)
