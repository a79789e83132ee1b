import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

# The lint cache keys its entries with a secret of the user's (shapeflow/cache.py, user_key):
# tests, and the commands they run, keep theirs in a folder of this session, not in ~/.cache.
if "SHAPEFLOW_TESTS_KEEP_XDG" not in os.environ:
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="shapeflow-test-xdg-")
    atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], True)
