import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# A shape rule that raises is a bug: outside the tests its node's outputs become unknown (and a
# warning says so); here, in this process and in every CLI subprocess, it raises and fails the test.
os.environ["SHAPEFLOW_RAISE_RULE_CRASHES"] = "1"
