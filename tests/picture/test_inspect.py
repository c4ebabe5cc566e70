"""``loopc inspect --format text|json|dot|svg|html [-o FILE]`` from the command line."""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from loopc.cli import commands  # noqa: F401  (registers the subcommands)
from loopc.cli.main import cli
from loopc.fingerprint import ConditionalInfo, NetworkInfo, Node
from tests.picture.samples import SAMPLES, SAMPLES_DIR, sample_info
from tests.picture.test_formats import parse_dot


def stable(info: NetworkInfo) -> list[tuple[object, ...]]:
    """What does not depend on the names TensorRT gives the layers loopc leaves unnamed (``and_0``:
    numbered per process, so they differ between two compilations in one process)."""
    return [(node.kind, node.name, node.layers) if isinstance(node, ConditionalInfo) else
            (node.kind, node.name, node.trip_limits, node.trip_count, [r.name for r in node.recurrences],
             node.outputs, node.layers_per_iteration, node.macs_per_iteration, len(node.critical_path))
            for node in _nodes(info.loops)]


def _nodes(nodes: list[Node]) -> list[Node]:
    return [found for node in nodes for found in [node, *_nodes(node.children)]]


def inspect(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["inspect", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("sample", SAMPLES)
def test_each_format_is_written_to_a_file(sample: str, tmp_path: pathlib.Path) -> None:
    model, info = str(SAMPLES_DIR / sample), sample_info(sample)
    written = {}
    for fmt in ("text", "json", "dot", "svg", "html"):
        out = tmp_path / f"loops.{fmt}"
        code, stdout, stderr = inspect(model, "--format", fmt, "-o", str(out))
        assert (code, stdout) == (0, ""), stderr
        written[fmt] = out.read_text(encoding="utf-8")

    assert stable(NetworkInfo.from_dict(json.loads(written["json"]))) == stable(info)
    assert written["svg"].startswith('<?xml version="1.0" encoding="UTF-8"?>\n<svg ')  # a standalone document
    assert ET.fromstring(written["svg"].encode()).tag == "{http://www.w3.org/2000/svg}svg"
    parse_dot(written["dot"])
    assert written["html"].startswith("<!DOCTYPE html>")
    loops = len(list(info.walk_loops()))
    name = pathlib.Path(sample).name
    # the summary first; the IR only with --ir
    assert written["text"].startswith(f"{name} as a TensorRT network: {info.layers} layers, {loops} loop")
    assert "\nloopc's passes changed" in written["text"] and "%" not in written["text"]


def test_text_is_the_default_and_goes_to_stdout_with_the_ir_behind_a_flag() -> None:
    code, summary, _ = inspect(str(SAMPLES_DIR / "nested_loops.onnx"))
    assert code == 0 and summary.startswith("nested_loops.onnx as a TensorRT network: ")
    assert "\nloopc's passes changed:\n" in summary and "from \"node" not in summary
    code, stdout, _ = inspect(str(SAMPLES_DIR / "nested_loops.onnx"), "--ir")
    assert code == 0
    assert stdout.startswith("nested_loops.onnx: 2 loop(s)\n") and stdout.endswith(summary)
    # the IR listing shows the nested loop once, inside its parent (not again on its own)
    assert stdout.count("from \"node '/Loop' (Loop, opset 17)\" {") == 1
    assert "\nloop /Loop_1__2: kCOUNT = 5\n" in stdout and "\n  loop /Loop__1: kCOUNT = 4\n" in stdout


def test_a_picture_goes_to_stdout_without_o() -> None:
    code, stdout, _ = inspect(str(SAMPLES_DIR / "openvino/loop_if.xml"), "--format", "json")
    assert code == 0 and json.loads(stdout)["title"] == "loop_if.xml"


def test_an_unknown_format_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "x.png"
    code, _, stderr = inspect(str(SAMPLES_DIR / "nested_loops.onnx"), "--format", "png", "-o", str(out))
    assert code == 2 and "Invalid value for '--format'" in stderr and not out.exists()


def test_an_output_in_a_missing_folder_is_one_line(tmp_path: pathlib.Path) -> None:
    out = tmp_path / "nowhere" / "x.svg"
    code, stdout, stderr = inspect(str(SAMPLES_DIR / "nested_loops.onnx"), "--format", "svg", "-o", str(out))
    assert code == 1 and stdout == ""
    assert stderr.splitlines() == [f"loopc: error: -o {out}: folder {out.parent} does not exist"]


def test_the_output_may_not_be_the_model(tmp_path: pathlib.Path) -> None:
    model = tmp_path / "m.onnx"
    model.write_bytes((SAMPLES_DIR / "nested_loops.onnx").read_bytes())
    code, _, stderr = inspect(str(model), "--format", "svg", "-o", str(model))
    assert code == 2 and "same file" in stderr
    assert model.read_bytes() == (SAMPLES_DIR / "nested_loops.onnx").read_bytes()
