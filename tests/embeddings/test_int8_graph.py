"""The local model's int8 graph: weights stay int8, vectors agree with the fp32 graph,
built once per cache dir, never on a path a user cannot write."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx import numpy_helper as nh
from tokenizers import Tokenizer

from amplifier_module_tool_agent_memory.config import EmbeddingConfig
from amplifier_module_tool_agent_memory.embeddings import int8_graph
from amplifier_module_tool_agent_memory.embeddings.int8_graph import int8_model_file, rewrite, rewrite_model_bytes
from amplifier_module_tool_agent_memory.embeddings.providers import (
    LOCAL_SHA256,
    CachedEmbedder,
    LocalEmbedder,
    local_model_file,
)

TOKENIZER = Path(int8_graph.__file__).parent.parent / "model_files" / "tokenizer.json"
TEXTS = [
    "Deploys are frozen every Friday after 3pm.",
    "The billing service moved from MySQL to PostgreSQL in May; the old replica is read-only.",
    "ok",
    "Caroline went to the LGBTQ support group yesterday and said it was powerful.",
]


@pytest.fixture(scope="module")
def rewritten() -> onnx.ModelProto:
    return onnx.load_from_string(rewrite_model_bytes(local_model_file()))


def _hidden_states(session: ort.InferenceSession, texts: list[str]) -> list[np.ndarray]:
    """Each text's last hidden state, one text per run (no padding), as the local provider runs them."""
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.no_padding()
    out = []
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        out.append(session.run(None, feed)[0])
    return out


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _fp32_graph_vectors(texts: list[str]) -> np.ndarray:
    """The shipped file run as it is: onnxruntime folds its int8 weights to fp32."""
    session = ort.InferenceSession(str(local_model_file()), providers=["CPUExecutionProvider"])
    means = [hidden[0].mean(axis=0) for hidden in _hidden_states(session, texts)]
    return np.array([vec / np.linalg.norm(vec) for vec in means])


def test_every_matmul_weight_runs_through_an_int8_kernel(rewritten: onnx.ModelProto) -> None:
    ops = [node.op_type for node in rewritten.graph.node]
    # 6 layers x (query, key, value, attention output, intermediate, output).
    assert ops.count("DynamicQuantizeMatMul") == 36
    weights = {node.input[1] for node in rewritten.graph.node if node.op_type == "DynamicQuantizeMatMul"}
    int8 = {i.name for i in rewritten.graph.initializer if i.data_type == TensorProto.INT8}
    assert weights <= int8


def test_matmul_weights_fit_in_seven_bits_so_no_cpu_saturates(rewritten: onnx.ModelProto) -> None:
    inits = {i.name: i for i in rewritten.graph.initializer}
    for node in rewritten.graph.node:
        if node.op_type == "DynamicQuantizeMatMul":
            weight = nh.to_array(inits[node.input[1]])
            # uint8 activation x weight, summed in pairs into int16: 2 x 255 x 64 <= 32,767.
            assert weight.min() >= -64 and weight.max() <= 63, node.input[1]


def test_no_weight_is_dequantised_as_a_constant(rewritten: onnx.ModelProto) -> None:
    int8 = {i.name for i in rewritten.graph.initializer if i.data_type == TensorProto.INT8}
    casts_of_weights = [n for n in rewritten.graph.node if n.op_type == "Cast" and n.input[0] in int8]
    assert casts_of_weights == []
    largest_float = max(int(np.prod(i.dims)) for i in rewritten.graph.initializer if i.data_type == TensorProto.FLOAT)
    assert largest_float <= 30522  # scales only (one per row): the fp32 table would be 30522 x 384


def test_the_embedding_tables_are_gathered_as_int8(rewritten: onnx.ModelProto) -> None:
    gathered = {n.input[0] for n in rewritten.graph.node if n.op_type == "Gather"}
    assert {"inner.embeddings.word_embeddings.weight_q", "inner.embeddings.position_embeddings.weight_q"} <= gathered


def test_simplifying_the_attention_changes_no_value(rewritten: onnx.ModelProto) -> None:
    plain = onnx.load(str(local_model_file()))
    rewrite(plain)  # the int8 rewrite alone, as GRAPH_VERSION 2 shipped it
    plain.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    assert len(rewritten.graph.node) <= len(plain.graph.node) - 60
    assert "IsNaN" not in {n.op_type for n in rewritten.graph.node}
    texts = [*TEXTS, "word " * 300]  # the last one cut at the tokenizer file's 128 tokens
    pairs = zip(_hidden_states(_session(rewritten), texts), _hidden_states(_session(plain), texts), strict=True)
    for ours, before in pairs:
        assert np.array_equal(ours, before)


def test_local_vectors_agree_with_the_fp32_graph(embedder: CachedEmbedder) -> None:
    ours = np.array(embedder.embed_documents(TEXTS))
    cosines = (ours * _fp32_graph_vectors(TEXTS)).sum(axis=1)
    # Measured 0.953 ("ok", 3 tokens: the least to average over) and 0.992-0.994 for sentences.
    assert cosines.min() >= 0.94 and cosines.mean() >= 0.98, cosines


def test_a_text_embeds_the_same_whatever_shares_its_batch(embedder: CachedEmbedder) -> None:
    alone = embedder.embed_documents([TEXTS[2]])[0]
    in_batch = embedder.embed_documents([TEXTS[1], TEXTS[2], "word " * 200])[1]
    assert alone == in_batch


def test_the_graph_is_built_once_per_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = int8_model_file(local_model_file(), LOCAL_SHA256, tmp_path)
    stamp = first.stat().st_mtime_ns

    def must_not_rebuild(source: Path) -> bytes:
        raise AssertionError("the cached graph was rebuilt")

    monkeypatch.setattr(int8_graph, "rewrite_model_bytes", must_not_rebuild)
    again = int8_model_file(local_model_file(), LOCAL_SHA256, tmp_path)
    assert again == first and again.stat().st_mtime_ns == stamp
    assert first.parent == tmp_path
    assert sorted(tmp_path.iterdir()) == sorted([first, first.with_suffix(".sha256")])


def test_a_damaged_cached_graph_is_rebuilt(tmp_path: Path) -> None:
    path = int8_model_file(local_model_file(), LOCAL_SHA256, tmp_path)
    intact = path.read_bytes()
    with path.open("r+b") as fh:
        fh.seek(len(intact) // 2)
        fh.write(b"\x00" * 64)
    again = int8_model_file(local_model_file(), LOCAL_SHA256, tmp_path)
    assert again == path and again.read_bytes() == intact


def test_an_unwritable_cache_dir_falls_back_to_the_temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    path = int8_model_file(local_model_file(), LOCAL_SHA256, blocker / "cache")
    assert path.parent == tmp_path / "tmp" / "agent-memory"
    assert onnx.load(str(path)).graph.node


def test_the_cache_dir_defaults_to_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(int8_graph.CACHE_ENV, str(tmp_path / "env-cache"))
    assert int8_graph.default_cache_dir() == tmp_path / "env-cache"
    monkeypatch.delenv(int8_graph.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert int8_graph.default_cache_dir() == tmp_path / "xdg" / "agent-memory"


def test_a_model_without_int8_weights_is_refused(tmp_path: Path) -> None:
    weight = nh.from_array(np.ones((4, 2), dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "fp32",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        [weight],
    )
    path = tmp_path / "fp32.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(ValueError, match="no int8 weights"):
        rewrite_model_bytes(path)


def test_a_batch_spread_over_threads_equals_one_text_at_a_time() -> None:
    texts = [f"memory {i}: the {w} service was redeployed" for i, w in enumerate("abcdef")] + ["ok", "word " * 120]
    serial = LocalEmbedder(EmbeddingConfig(batch_workers=1)).embed_documents(texts)
    pooled = LocalEmbedder(EmbeddingConfig(batch_workers=3)).embed_documents(texts)
    assert pooled == serial
