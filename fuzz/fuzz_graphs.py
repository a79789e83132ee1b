"""atheris harness: bytes -> choices -> a random Squeeze/Unsqueeze model -> the pipeline.

    python fuzz/fuzz_graphs.py fuzz/corpus/graphs -max_total_time=60    (see fuzz/README.md)

The bytes drive fuzz/graphgen.py (through atheris's FuzzedDataProvider): the first choice picks a
*valid* model (which shapeflow must accept: no rejection, no error-level finding, an optimized
model that loads and is a fixpoint) or an *odd* one (wrong axes tensors, hostile external data,
broken graphs, subgraphs and functions), where only ShapeflowError may escape.
"""

from __future__ import annotations

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["shapeflow", "pipeline", "graphgen"]):
    import graphgen
    import pipeline


class FDPChooser:
    """graphgen's Chooser over a FuzzedDataProvider (an exhausted provider answers with lows)."""

    def __init__(self, fdp: atheris.FuzzedDataProvider) -> None:
        self.fdp = fdp

    def int(self, lo: int, hi: int) -> int:
        return self.fdp.ConsumeIntInRange(lo, hi)

    def bool(self) -> bool:
        return self.fdp.ConsumeBool()


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    odd = fdp.ConsumeBool()
    model = graphgen.generate(FDPChooser(fdp), odd=odd)
    out = pipeline.run(model.SerializeToString())
    if not odd and (out.rejected is not None or out.errors):
        raise pipeline.InvariantError(f"a valid model was rejected or flagged: {out.rejected} ({out.errors} errors)")


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
