"""Checkpoints an attacker or an accident hands over (issue 43), from Python:
custom object states that nest too deep or allocate by argument are refused
naming the file, a checkpoint read without its manifest still restores Python
objects, and an error quoting bytes that are not UTF-8 keeps its message."""
import io
import json
import os
import struct
import zipfile

import pytest

import accel

LINEAR = '[{"type": "Linear", "in_features": 4, "out_features": 3}]'


class _Holder:
    def __init__(self, state):
        self.state = state

    def state_dict(self):
        return self.state

    def load_state_dict(self, state):
        self.state = state


def _setup(tmp_path, state):
    acc = accel.Accelerator(cpu=True, project_dir=str(tmp_path))
    model = accel.Model.from_json(LINEAR)
    acc.prepare(model)
    holder = _Holder(state)
    acc.register_for_checkpointing(holder)
    acc.keep_alive = model  # objects that die are left out of checkpoints
    return acc, holder


def _torch_save_bytes(data):
    """What libaccel writes for a custom object: torch.save of a Python bytes object (protocol 3)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x03B" + struct.pack("<I", len(data)) + data + b".")
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")
    return out.getvalue()


def _tamper(checkpoint, name, data):
    """Replaces a checkpoint file and its manifest entry, as someone who can write the directory could."""
    import xxhash
    (checkpoint / name).write_bytes(data)
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"][name] = {"bytes": len(data), "xxh3": xxhash.xxh3_64_hexdigest(data)}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("state, refusal", [
    # A list nesting 100,000 deep loaded, and then every save_state failed.
    (b"\x80\x04" + b"]" * 100_001 + b"a" * 100_000 + b".", "more than 256 levels deep"),
    # bytearray(2**30): allocated a gigabyte the file never held.
    (b"\x80\x02cbuiltins\nbytearray\nJ\x00\x00\x00\x40\x85R.", "bytearray is rebuilt from bytes only"),
])
def test_hostile_custom_states_are_refused_naming_the_file(tmp_path, state, refusal):
    acc, holder = _setup(tmp_path, {"count": 1})
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    holder.state = {"count": 2}
    _tamper(ckpt, "custom_checkpoint_0.pkl", _torch_save_bytes(state))
    with pytest.raises(accel.AccelError) as error:
        acc.load_state(str(ckpt))
    assert "custom_checkpoint_0.pkl" in str(error.value)
    assert refusal in str(error.value)
    assert holder.state == {"count": 2}
    acc.save_state(str(tmp_path / "again"))  # the run can still save


def test_without_its_manifest_a_checkpoint_still_restores_python_objects(tmp_path):
    acc, holder = _setup(tmp_path, {"count": 1, "blob": bytearray(b"xy")})
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    holder.state = {}
    os.remove(ckpt / "manifest.json")  # read as Python Accelerate's directory
    acc.load_state(str(ckpt))
    assert holder.state == {"count": 1, "blob": bytearray(b"xy")}


def test_accelerates_torch_saved_custom_state_loads_as_plain_data(tmp_path):
    torch = pytest.importorskip("torch")  # python3-torch, installed by scripts/install-deps.sh
    acc, holder = _setup(tmp_path, {"count": 1})
    ckpt = tmp_path / "ckpt"
    acc.save_state(str(ckpt))
    os.remove(ckpt / "manifest.json")
    torch.save({"count": 5, "names": ["a", "b"]}, str(ckpt / "custom_checkpoint_0.pkl"))  # Accelerate's save_custom_state
    acc.load_state(str(ckpt))
    assert holder.state == {"count": 5, "names": ["a", "b"]}


def test_an_error_quoting_bytes_that_are_not_utf8_keeps_its_message(tmp_path):
    path = tmp_path / "not_utf8.safetensors"
    header = b'{"0.weight\xff":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
    acc = accel.Accelerator(cpu=True)
    model = accel.Model.from_json(LINEAR)
    with pytest.raises(accel.AccelError) as error:
        acc.load_checkpoint_in_model(model, str(path))
    assert error.value.code == accel.core.ERR_IO
    assert str(path) in str(error.value)
    assert "UTF-8" in str(error.value)
