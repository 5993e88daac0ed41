"""Files libaccel writes load in Hugging Face's safetensors package with
identical tensors, and files that package writes load in libaccel."""
import json
import os
import subprocess
import sys

import numpy as np
from safetensors.numpy import load_file, save_file

TOOL = os.environ["ACCEL_SAFETENSORS_TOOL"]


def test_python_reads_what_libaccel_writes(tmp_path):
    path = str(tmp_path / "from_libaccel.safetensors")
    subprocess.run([TOOL, "write", path], check=True)
    tensors = load_file(path)
    np.testing.assert_array_equal(tensors["weight"], (np.arange(12, dtype=np.float32).reshape(3, 4) / np.float32(7)))
    assert tensors["weight"].dtype == np.float32
    np.testing.assert_array_equal(tensors["bias"], np.arange(3, dtype=np.float64) - 1)
    np.testing.assert_array_equal(tensors["steps"], np.array([5, -9], dtype=np.int64))
    np.testing.assert_array_equal(tensors["half"], np.arange(4, dtype=np.float16))
    np.testing.assert_array_equal(tensors["mask"], np.array([True, False, True]))
    from safetensors import safe_open
    with safe_open(path, framework="numpy") as f:
        assert f.metadata() == {"format": "pt", "written_by": "libaccel"}


def test_libaccel_reads_what_python_writes(tmp_path):
    path = str(tmp_path / "from_python.safetensors")
    rng = np.random.default_rng(0)
    tensors = {
        "a": rng.standard_normal((5, 3)).astype(np.float32),
        "b": np.arange(7, dtype=np.int32),
        "c": rng.standard_normal(4).astype(np.float16),
        "scalar": np.array(2.5, dtype=np.float64),
        "u8": np.arange(6, dtype=np.uint8).reshape(2, 3),
    }
    save_file(tensors, path, metadata={"source": "python"})
    out = subprocess.run([TOOL, "read", path], check=True, capture_output=True, text=True).stdout
    seen = json.loads(out)
    assert seen["__metadata__"] == {"source": "python"}
    for name, array in tensors.items():
        dtype, shape, total = seen[name]
        assert shape == list(array.shape), name
        assert abs(total - float(array.astype(np.float64).sum())) < 1e-6 * max(1.0, abs(total)), name


def test_libaccel_rejects_a_truncated_file_with_its_name(tmp_path):
    path = str(tmp_path / "cut.safetensors")
    save_file({"a": np.ones(100, dtype=np.float32)}, path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 10)
    result = subprocess.run([TOOL, "read", path], capture_output=True, text=True)
    assert result.returncode == 1
    assert "cut.safetensors" in result.stderr and "not a valid safetensors file" in result.stderr


if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", __file__]))
