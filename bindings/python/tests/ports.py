"""reserve_port(): a TCP port on 127.0.0.1 for a rendezvous the test starts next, reserved as
tests/support/reserve_port.py explains (left in TIME_WAIT, so that no other process's bind(0)
or outgoing connection takes it under `ctest -j` before the store listens on it)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "support"))
from reserve_port import reserve_port  # noqa: E402,F401
