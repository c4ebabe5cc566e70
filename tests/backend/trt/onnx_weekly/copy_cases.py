"""Copy the node tests of an onnx-weekly install that loopc's tests read into this folder.

    python tests/backend/trt/onnx_weekly/copy_cases.py WEEKLY   (a virtual environment or python with onnx-weekly)

Each case is written as ONNX's node-test data is laid out (``model.onnx``, ``test_data_set_0/input_N.pb`` and
``output_N.pb``); ``cases.json`` records the onnx release and each case's tolerances.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))

from benchmarks.onnx_weekly import weekly_python, write_cases

#: The cases: the next release's changed semantics, and its new op.
CASES = [
    "test_dynamicquantizelinear_zero_input",
    "test_negative_pad_wrap",
    "test_reduce_log_sum_exp_float16_large_sum",
    "test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True",
    "test_groupedmatmul",
    "test_groupedmatmul_with_bias",
    "test_groupedmatmul_float16_int32",
    "test_groupedmatmul_float64_int64",
    "test_groupedmatmul_with_unused_group",
    "test_groupedmatmul_without_bias_explicit_empty_input",
    "test_groupedmatmul_zero_tokens",
    "test_groupedmatmul_zero_selections",
]


def main() -> int:
    python = weekly_python(sys.argv[1]) if len(sys.argv) > 1 else None
    if python is None:
        print(__doc__)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        facts = write_cases(python, pathlib.Path(tmp))
        for name in CASES:
            shutil.rmtree(HERE / name, ignore_errors=True)
            shutil.copytree(pathlib.Path(tmp) / name, HERE / name)
    kept = {"onnx": facts["onnx"], "opset": facts["opset"], "ir_version": facts["ir_version"],
            "cases": {name: facts["cases"][name] for name in CASES}}
    (HERE / "cases.json").write_text(json.dumps(kept, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
