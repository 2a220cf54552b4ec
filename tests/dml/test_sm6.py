"""Shader model 6 kernel paths are exercised: a model whose DirectML kernel exists only as DXIL.

A float32 ``Add`` of [3,4] runs on DirectML (the DML EP, CPU fallback disabled) and matches on the
``wine10-sm6`` stack (vkd3d with its DXIL front end: shader model 6.0), and fails at session
creation on ``wine8-sm51`` (Wine 8's vkd3d 1.6 compiles DXBC only: shader model 5.1). Each side is
skipped, with the command that installs it, when its stack is not set up
(``onnx-dml-bench setup dml --stack wine10-sm6``). Wine tests: run them serially (no -n).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.xdist_group("wine")

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onnx_dml_bench.dml import probe, select  # noqa: E402
from onnx_dml_bench.dml.node import client  # noqa: E402
from onnx_dml_bench.dml.wine import root, stackinfo  # noqa: E402


def _add_model(path: Path) -> Path:
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add")], "dxil_only_add",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def _stack(name: str):
    try:
        return select.select_stack({"stack": name}, need_ort=True)
    except stackinfo.StackError as e:
        pytest.skip(f"{name} not set up ({e}); set it up with `onnx-dml-bench setup dml --stack {name}`")


@pytest.fixture()
def add_job(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32)
    return _add_model(tmp_path / "add.onnx"), {"a": a, "b": b}


@pytest.fixture(autouse=True)
def _shutdown():
    yield
    client.shutdown()


def test_dxil_only_add_runs_on_directml_with_shader_model_6(add_job):
    st = _stack(stackinfo.SM6)
    assert probe.shader_model(st) == "6.0"
    model, feeds = add_job
    dml, cpu = client.run_jobs(st, [client.Job(model, "dml", feeds, ["y"], verbose=True),
                                    client.Job(model, "cpu", feeds, ["y"])], timeout_s=300)
    assert dml.ok, f"{dml.stage}: {dml.error}"
    assert dml.log and "DmlExecutionProvider" in dml.log and "placed on [DmlExecutionProvider]" in dml.log
    assert cpu.ok, cpu.error
    want = feeds["a"] + feeds["b"]
    np.testing.assert_array_equal(cpu.outputs["y"], want)
    np.testing.assert_allclose(dml.outputs["y"], want, rtol=0, atol=0)      # one float32 add: exact


def test_same_model_fails_at_session_creation_on_shader_model_5_1(add_job):
    st = _stack(stackinfo.DEFAULT)
    assert probe.shader_model(st) == "5.1"
    model, feeds = add_job
    (dml,) = client.run_jobs(st, [client.Job(model, "dml", feeds, ["y"])], timeout_s=300)
    assert not dml.ok and not dml.crashed and not dml.timed_out
    assert dml.stage == "session", (dml.stage, dml.error)


def test_the_root_sees_a_checkout_it_was_not_set_up_from(tmp_path_factory):
    """The launcher binds the folders named at each use: a folder outside /tmp and outside the cache
    (a CI clone elsewhere on the machine) is visible in the root at its own path."""
    st = _stack(stackinfo.SM6)
    here = Path(__file__).resolve().parent
    probe = here / f".root-bind-probe-{os.getpid()}"
    probe.mkdir()
    try:
        (probe / "mark").write_text("seen")
        env = {**st.env(), root.BINDS_ENV: f"{st.extra_env[root.BINDS_ENV]}:{probe}"}
        r = subprocess.run([st.launcher, "cat", str(probe / "mark")], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and r.stdout == "seen", r.stderr
        if not str(probe).startswith("/tmp/"):                              # else seen through /tmp
            r = subprocess.run([st.launcher, "cat", str(probe / "mark")], env={**env, root.BINDS_ENV: ""},
                               capture_output=True, text=True, timeout=60)
            assert r.returncode != 0                                       # not bound: not there
    finally:
        shutil.rmtree(probe)
