"""find_executable_batch_size from Python: Accelerate 1.x's tests/test_memory_utils.py cases
(its expected batch sizes, ported), and a real allocation failure inside libaccel."""
import subprocess
import sys
import textwrap

import pytest

import accel
from accel.utils import find_executable_batch_size, should_reduce_batch_size

# Accelerate's expected sequence: int(batch_size * 0.9) from 128 down to 8.
ACCELERATE_SIZES = [128, 115, 103, 92, 82, 73, 65, 58, 52, 46, 41, 36, 32, 28, 25, 22, 19, 17, 15, 13, 11, 9, 8]


def raise_fake_out_of_memory():
    raise RuntimeError("CPU out of memory.")


def test_memory_implicit():
    batch_sizes = []

    @find_executable_batch_size(starting_batch_size=128)
    def mock_training_loop_function(batch_size):
        batch_sizes.append(batch_size)
        if batch_size != 8:
            raise_fake_out_of_memory()

    mock_training_loop_function()
    assert batch_sizes == ACCELERATE_SIZES


def test_memory_explicit():
    batch_sizes = []

    @find_executable_batch_size(starting_batch_size=128)
    def mock_training_loop_function(batch_size, arg1):
        batch_sizes.append(batch_size)
        if batch_size != 8:
            raise_fake_out_of_memory()
        return batch_size, arg1

    assert mock_training_loop_function("hello") == (8, "hello")
    assert batch_sizes == ACCELERATE_SIZES


def test_start_zero_and_approach_zero():
    @find_executable_batch_size(starting_batch_size=0)
    def never_called(batch_size):
        raise AssertionError("called")

    with pytest.raises(RuntimeError, match="No executable batch size found, reached zero."):
        never_called()

    @find_executable_batch_size(starting_batch_size=128)
    def never_fits(batch_size):
        raise_fake_out_of_memory()

    with pytest.raises(RuntimeError, match="No executable batch size found, reached zero."):
        never_fits()


def test_verbose_guard_and_other_errors():
    @find_executable_batch_size(starting_batch_size=128)
    def mock_training_loop_function(batch_size, arg1, arg2):
        raise_fake_out_of_memory()

    with pytest.raises(TypeError, match=r"Batch size was passed into `mock_training_loop_function` as the first "
                                        r"argument when called.*`mock_training_loop_function\(arg1=hello, "
                                        r"arg2=world\)`"):
        mock_training_loop_function(128, "hello", "world")

    @find_executable_batch_size(starting_batch_size=16)
    def fails(batch_size):
        raise ValueError("Oops, we had an error!")

    with pytest.raises(ValueError, match="Oops, we had an error!"):
        fails()


def test_should_reduce_batch_size_knows_libaccels_resource_errors():
    assert should_reduce_batch_size(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert should_reduce_batch_size(MemoryError())
    assert not should_reduce_batch_size(RuntimeError("shape mismatch"))
    assert not should_reduce_batch_size(ValueError("CUDA out of memory."))


def test_a_real_allocation_failure_in_libaccel_shrinks_the_batch():
    # In a child: RLIMIT_AS 1 GiB above what the process maps makes LibTorch's CPU allocator fail
    # for a forward whose output needs batch_size * 4 MiB; libaccel reports ERR_RESOURCE.
    code = textwrap.dedent("""
        import resource
        import numpy as np
        import accel

        # An embedding lookup: no BLAS call (OpenBLAS waits forever for its buffer when malloc fails).
        model = accel.Model.from_json('[{"type": "Embedding", "num_embeddings": 1, "embedding_dim": 1048576}]')
        with open("/proc/self/status") as status:
            mapped = next(int(l.split()[1]) * 1024 for l in status if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (1 << 30), resource.RLIM_INFINITY))
        tried, codes = [], []

        @accel.find_executable_batch_size(starting_batch_size=4096)
        def forward(batch_size):
            tried.append(batch_size)
            try:
                model(accel.tensor(np.zeros(batch_size, np.int64)))
            except accel.AccelError as error:
                codes.append(error.code)
                raise
            return batch_size

        found = forward()
        assert set(codes) == {accel.core.ERR_RESOURCE}, codes
        assert tried[0] == 4096 and found == tried[-1] and 16 <= found and found * (1 << 22) < (1 << 30), tried
        print("found", found)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "found" in result.stdout
