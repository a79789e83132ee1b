"""Draw the picture the README shows: ``examples/axis_errors.onnx`` as ``shapeflow infer --format
dot`` prints it, rendered by Graphviz.

    python examples/make_pictures.py            # writes examples/axis_errors.svg
    python examples/make_pictures.py /tmp/out   # or somewhere else

Needs Graphviz's ``dot`` on PATH (``apt-get install graphviz``, ``brew install graphviz``);
shapeflow itself does not.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's shapeflow, installed or not

from shapeflow.drivers.api import infer  # noqa: E402
from shapeflow.render.pictures import picture  # noqa: E402

PICTURES = {"axis_errors.onnx": "axis_errors.svg"}


def main(argv: list[str]) -> int:
    out_dir = Path(argv[0]) if argv else HERE
    dot = shutil.which("dot")
    if dot is None:
        print("make_pictures: Graphviz's `dot` is not installed", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    for model, image in PICTURES.items():
        # the path as the README's command line names it, so the picture's title matches
        text = picture(infer(HERE / model), "dot").replace(str(HERE / model), f"examples/{model}")
        svg = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True, check=True).stdout
        (out_dir / image).write_text(svg)
        print(f"wrote {out_dir / image}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
