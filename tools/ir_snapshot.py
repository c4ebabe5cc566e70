"""Write the IR text of every sample and corpus model after the passes, one file per model, to compare trees.

A refactoring of the IR or the passes must not change what they make. Run this before and after and
``diff -r`` the two folders: any difference is a behaviour change to explain. A model loopc refuses writes
its one-line error instead, so a new or lost refusal shows too.

Usage: ``python tools/ir_snapshot.py OUT_DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for the tests package


def models() -> list[tuple[str, Path, int | None]]:
    """(name, path, max trips) of every sample and corpus model."""
    from tests.corpus import load_corpus

    found = [(f"samples/{p.name}", p, None) for p in sorted((ROOT / "samples").glob("*.onnx"))]
    found += [(f"samples/openvino/{p.name}", p, None) for p in sorted((ROOT / "samples/openvino").glob("*.xml"))]
    found += [(case.id, case.model, case.max_trips) for case in load_corpus(ROOT / "tests/models")]
    return found


def snapshot(path: Path, max_trips: int | None) -> str:
    from loopc.compiler import load_ir, optimize
    from loopc.errors import LoopcError
    from loopc.ir import format_model

    try:
        model = load_ir(str(path))
        optimize(model, max_trips=max_trips)
    except LoopcError as exc:
        return f"refused: {exc}\n"
    return format_model(model)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, path, max_trips in models():
        target = out / (name.replace("/", "__") + ".ir")
        target.write_text(snapshot(path, max_trips))
        print(name, flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
