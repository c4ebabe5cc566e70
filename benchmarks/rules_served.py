"""Which corpus models each pass rewrote: how many variants of a family one rule serves.

    python benchmarks/rules_served.py [-k SUBSTRING]    # e.g. -k _family/ for the decoder families

For every model file of ``tests/models`` whose path holds SUBSTRING (each file once, at its first case's
``max-trips``), the passes run as ``loopc build`` runs them; a pass counts for a model when it changed the
graph (its statistics). Prints, per pass, the count and the models; a refusal is printed as such.
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    from loopc.compiler import load_ir, optimize
    from loopc.errors import LoopcError
    from tests.corpus import load_corpus

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only model files whose path holds this")
    args = parser.parse_args()
    served: dict[str, list[str]] = collections.defaultdict(list)
    seen: set[pathlib.Path] = set()
    for case in load_corpus(ROOT / "tests" / "models"):
        if args.k not in str(case.model) or case.model in seen:
            continue
        seen.add(case.model)
        name = f"{case.suite}/{case.model.stem}"
        try:
            model = load_ir(str(case.model))
            stats = optimize(model, max_trips=case.max_trips)
        except LoopcError as exc:
            print(f"{name}: refused: {exc}")
            continue
        for rule in sorted({key.split(".")[0] for key in stats}):
            served[rule].append(name)
    print(f"{len(seen)} model files")
    for rule, models in sorted(served.items(), key=lambda item: (-len(item[1]), item[0])):
        print(f"{rule}: {len(models)}: {', '.join(models)}")


if __name__ == "__main__":
    main()
