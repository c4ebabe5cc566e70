"""Integer outputs (a decoder's tokens) in ``loopc check``: equal or not, element by element, and every report says
"equal" or how many elements differ, never a relative error (``max rel ?`` where a reference token is 0).

The decoder is the real sample with onnxruntime's tokens as the reference, one of them changed by hand.
"""

from __future__ import annotations

import json
import pathlib
import xml.etree.ElementTree as ET

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner

from loopc.check.compare import compare
from loopc.check.markdown import numbers_cell, output_line
from loopc.check.results import PASSED, CheckResult, TargetResult
from loopc.cli import check as _check  # noqa: F401  (registers the command)
from loopc.cli.main import cli
from tests.check import reports_data

SAMPLES = pathlib.Path(__file__).resolve().parents[2] / "samples"
DECODER, INPUTS = SAMPLES / "greedy_gru_decoder.onnx", SAMPLES / "greedy_gru_decoder_inputs.npz"


def test_integers_are_equal_or_not_whatever_the_tolerances() -> None:
    """rtol 0.5 would let 10 for 6 pass as a float; as a token it is wrong. A reference 0 is no special case."""
    [same, other, zero] = compare({"a": np.array([10, 6]), "b": np.array([10, 10]), "c": np.array([True, True])},
                                  {"a": np.array([10, 6]), "b": np.array([10, 6]), "c": np.array([True, False])},
                                  0.5, 1.0)
    assert (same.passed, same.max_abs, same.max_rel, same.reason) == (True, None, None, "")
    assert (other.passed, other.max_abs, other.max_rel, other.reason) == (False, None, None, "1 of 2 elements differ")
    assert (zero.passed, zero.reason) == (False, "1 of 2 elements differ")


def test_the_report_lines_of_integer_outputs() -> None:
    equal, differ = compare({"tokens": np.array([10, 10, 6])}, {"tokens": np.array([10, 10, 6])}, 1e-5, 1e-5) + \
        compare({"tokens": np.array([10, 10, 6])}, {"tokens": np.array([10, 10, 0])}, 1e-5, 1e-5)
    assert output_line(equal) == "tokens: passed · equal · shape 3"
    assert output_line(differ) == "tokens: failed · shape 3 · 1 of 3 elements differ"
    result = TargetResult("decoder", "sm89", checks=[CheckResult("numbers", PASSED)], outputs=[equal])
    assert numbers_cell(result).text == "equal (1 output)"
    hidden = compare({"h": np.array([1.0, 2.0], np.float32)}, {"h": np.array([1.0, 2.000001], np.float32)}, 1e-5, 0)
    result.outputs += hidden
    [h] = hidden
    assert numbers_cell(result).text == f"max abs {h.max_abs:.3g} · max rel {h.max_rel:.3g} (2 outputs)"


def test_the_html_table_says_equal_where_floats_have_their_errors() -> None:
    from loopc.check.html import html_report

    page = html_report(reports_data.passing_report())  # the decoder: tokens equal, hidden state within tolerance
    assert "<td>tokens</td><td>✓ passed</td><td>equal</td><td></td><td>12</td>" in page
    assert "<td>hidden</td><td>✓ passed</td><td>1e-06</td><td>3.5e-06</td><td>16</td>" in page


@pytest.fixture(scope="module")
def tokens() -> np.ndarray:
    session = ort.InferenceSession(str(DECODER), providers=["CPUExecutionProvider"])
    [out] = session.get_outputs()
    [value] = session.run([out.name], dict(np.load(INPUTS)))
    assert out.name == "tokens.3" and value.dtype == np.int64 and value.size > 1 and value[-1] == 0
    return value


def test_loopc_check_reports_a_changed_token_by_how_many_differ(tmp_path: pathlib.Path, tokens: np.ndarray) -> None:
    """The engine's last token is onnxruntime's; the golden reference says otherwise at one element."""
    golden = tokens.copy()
    golden[-2] = 0  # the engine's is not 0 there: a relative error would be infinite
    np.savez(tmp_path / "golden.npz", **{"tokens.3": golden})
    (tmp_path / "manifest.toml").write_text(
        f'[[model]]\nname = "decoder"\npath = "{DECODER}"\ninputs = "{INPUTS}"\nreference = "golden.npz"\n'
        'targets = ["sm89"]\n')
    files = {kind: tmp_path / f"report.{kind}" for kind in ("json", "md", "html", "xml")}
    result = CliRunner().invoke(cli, ["check", str(tmp_path / "manifest.toml"), "--json", str(files["json"]),
                                      "--markdown", str(files["md"]), "--html", str(files["html"]),
                                      "--junit", str(files["xml"])])
    assert result.exit_code == 1, result.output
    differ = f"1 of {tokens.size} elements differ"
    [report] = json.loads(files["json"].read_text())["results"]
    assert report["outputs"] == [{"name": "tokens.3", "passed": False, "max_abs": None, "max_rel": None,
                                  "shape": [tokens.size], "reason": differ, "of_scale": None}]
    numbers = next(c for c in report["checks"] if c["check"] == "numbers")
    assert (numbers["message"], numbers["details"]) == (f"output 'tokens.3': {differ}", f"tokens.3: {differ}")
    texts = [files[kind].read_text() for kind in ("md", "html")]
    texts.append(" ".join(ET.parse(files["xml"]).getroot().itertext()))
    for text in texts:
        assert differ in text and "max rel" not in text
