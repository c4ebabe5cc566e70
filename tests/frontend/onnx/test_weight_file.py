"""An ONNX file is read with its large tensors' bytes left where they lie (:mod:`loopc.frontend.onnx.weight_file`):
protobuf parses a model of a few kilobytes, each weight is read from the file into its array, and the arrays are
the ones ``onnx.load`` finds."""

from __future__ import annotations

import pathlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from loopc.frontend.onnx import import_model, weight_file, weightless
from loopc.frontend.onnx import importer
from loopc.frontend.onnx.importer import load
from loopc.ir import format_model
from tests.frontend.onnx.test_weightless import _loop_model


@pytest.fixture(autouse=True)
def walk_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk reads only large files; these are small."""
    monkeypatch.setattr(importer, "WALKED_FROM", 0)


def _constants(model: onnx.ModelProto | str) -> tuple[str, dict[str, np.ndarray]]:
    constants: dict[str, np.ndarray] = {}
    return format_model(import_model(model), constants=constants), constants


def test_the_file_is_parsed_without_its_weights(tmp_path: pathlib.Path) -> None:
    """W [64, 64] (main graph), c [48, 48] (a Constant in the loop body) and b [2, 48] (the body's initializer) stay
    in the file; the small ones (the crop's shape, the trip count) are parsed."""
    path = tmp_path / "m.onnx"
    onnx.save(_loop_model(), path)
    weights = weightless.Weights()
    proto = load(str(path), weights)
    assert [(s.offset, s.length) for s in weights.sources] and all(
        isinstance(s, weightless.Span) and s.path == str(path) for s in weights.sources)
    assert sorted(s.length for s in weights.sources) == [2 * 48 * 4, 48 * 48 * 4, 64 * 64 * 4]
    assert proto.ByteSize() < sum(s.length for s in weights.sources) / 20  # 589 bytes parsed of 27,648
    whole = onnx.load(path)
    np.testing.assert_array_equal(weights.array(proto.graph.initializer[0], "W"),
                                  numpy_helper.to_array(whole.graph.initializer[0]))


def test_the_ir_read_from_the_file_is_the_ir_of_the_loaded_model(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_loop_model(), path)
    from_file, from_proto = _constants(str(path)), _constants(onnx.load(path))
    assert from_file[0].replace(str(path), "<model>") == from_proto[0]
    assert from_file[1].keys() == from_proto[1].keys()
    for name, array in from_file[1].items():
        assert array.dtype == from_proto[1][name].dtype and not array.flags.writeable
        np.testing.assert_array_equal(array, from_proto[1][name], err_msg=name)


def test_external_data_stays_in_its_file(tmp_path: pathlib.Path) -> None:
    """Initializers saved apart (size_threshold 0; onnx keeps Constant values in the model): the large ones are
    read from weights.bin at translation, the small ones (which inference may read) into the model."""
    path = tmp_path / "m.onnx"
    onnx.save(_loop_model(), path, save_as_external_data=True, location="weights.bin", size_threshold=0)
    weights = weightless.Weights()
    proto = load(str(path), weights)
    assert sorted((pathlib.Path(s.path).name, s.length) for s in weights.sources if isinstance(s, weightless.Span)) \
        == [("m.onnx", 48 * 48 * 4), ("weights.bin", 2 * 48 * 4), ("weights.bin", 64 * 64 * 4)]
    crop = next(t for t in proto.graph.initializer if t.name == "crop")
    assert numpy_helper.to_array(crop).tolist() == [2, 48]
    from_file, from_proto = _constants(str(path)), _constants(onnx.load(path))
    for name, array in from_file[1].items():
        np.testing.assert_array_equal(array, from_proto[1][name], err_msg=name)


def test_a_weight_short_of_its_dims_is_refused_by_name(tmp_path: pathlib.Path) -> None:
    model = _loop_model()
    model.graph.initializer[0].raw_data = model.graph.initializer[0].raw_data[:-8]
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    with pytest.raises(Exception, match="initializer 'W' has shape \\[64, 64\\].*16376 bytes of raw data"):
        import_model(str(path))


def test_dims_written_packed_are_read(tmp_path: pathlib.Path) -> None:
    """A writer may pack ``dims`` (one length-delimited field): the walk reads them, and the stand-in keeps them."""
    w = numpy_helper.from_array(np.arange(6 * 20, dtype=np.float32).reshape(6, 20), "w")
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 20])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    plain = model.SerializeToString()
    unpacked = b"\x08\x06\x08\x14"  # dims: field 1, varint, 6 then 20
    assert plain.count(unpacked) == 1
    path = tmp_path / "m.onnx"
    path.write_bytes(plain.replace(unpacked, b"\x0a\x02\x06\x14"))  # one packed field, as long: 2 bytes, 6 and 20
    assert list(onnx.load(path).graph.initializer[0].dims) == [6, 20]
    weights = weightless.Weights()
    proto = weight_file.read(str(path), weights)
    assert len(weights.sources) == 1 and list(proto.graph.initializer[0].dims) == [6, 20]
    np.testing.assert_array_equal(weights.array(proto.graph.initializer[0], "w"), numpy_helper.to_array(w))
