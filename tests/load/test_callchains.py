"""The ATen operator under each blocking CUDA call, read from the native call chains of a real template-B
export (fixtures/tplb_loss_callback_sqlite: trainapp loss_callback, `loss.item()` every step in a callback,
nsys 2025.3.2 with --cudabacktrace=all --python-backtrace=cuda --python-sampling=true --pytorch=autograd-nvtx)."""
import polars as pl
import pytest

from nsys_expert.load import load_paths
from nsys_expert.load.sqlite.callchains import aten_name

from conftest import FIXTURES, diagnosed

TPLB = FIXTURES / "tplb_loss_callback_sqlite" / "input"


@pytest.mark.parametrize("struct,aten", [
    ("item", "aten::item"), ("_local_scalar_dense", "aten::_local_scalar_dense"), ("index_Tensor", "aten::index"),
    ("to_dtype_layout", "aten::to"), ("copy_", "aten::copy_"), ("_to_copy", "aten::_to_copy"), ("nonzero", "aten::nonzero"),
    ("_foreach_add__Scalar", "aten::_foreach_add_"), ("where_self", "aten::where"), ("index_put_", "aten::index_put_"),
])
def test_aten_names(struct, aten):
    assert pl.select(aten_name(pl.lit(struct))).item() == aten


def test_the_blocking_calls_carry_their_operators():
    prof = load_paths([str(TPLB)])
    ops = prof.tables["call_ops"]
    # 36 cudaStreamSynchronize calls in the export: the item() reads (through _local_scalar_dense) and the
    # start-up's .to() copies
    pairs = set(zip(ops["op_outer"].to_list(), ops["op_inner"].to_list()))
    assert ("aten::item", "aten::_local_scalar_dense") in pairs and ("aten::to", "aten::copy_") in pairs
    assert ops.height >= 20


def test_nsys_alone_names_the_operator_behind_the_syncs():
    doc = diagnosed(TPLB)
    facts = doc["facts"]
    assert facts["sync_source_op"] == "aten::item" and facts["sync_source_inner_op"] == "aten::_local_scalar_dense"
    assert facts["sync_source_share_pct"] > 90
    assert doc["fact_sources"]["sync_source_op"] == "loss_callback.sqlite.gz"


def test_operator_ranges_are_not_phases():
    """autograd-NVTX ranges ("aten::embedding_backward, op_id = 3146") are operators, not the step's phases."""
    doc = diagnosed(TPLB)
    names = str(doc["facts"].get("idle_top_phase_names", ""))
    assert "op_id" not in names and "aten::" not in names
