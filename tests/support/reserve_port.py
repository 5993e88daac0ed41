"""Prints TCP ports on 127.0.0.1 reserved for a server the test starts next.

    reserve_port.py [COUNT]      one port per line (default 1)

A port that was merely bound and closed ("free now") can be taken by any
process's outgoing connection or bind(0) before the test's server listens on
it; under `ctest -j` that happened. Here the port is left in TIME_WAIT by a
connection accepted on it and closed from that side first: for about a minute
the kernel hands it to no connect() and no bind(0), while a server that sets
SO_REUSEADDR (c10d's TCPStore, slurmctld and slurmd, gunicorn and uvicorn)
still binds it. `accel launch --master_port 0` reserves its port the same way
(src/cli/launch_environment.cpp). Importable: reserve_ports(count).
"""
import socket
import sys


def reserve_port(host="127.0.0.1"):
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, 0))
        listener.listen(1)
        address = listener.getsockname()
        with socket.create_connection(address) as client:
            accepted, _ = listener.accept()
            accepted.close()  # this side closes first: the reserved address goes to TIME_WAIT
            client.recv(1)  # the FIN, before the client closes in turn
    return address[1]


def reserve_ports(count, host="127.0.0.1"):
    return [reserve_port(host) for _ in range(count)]


if __name__ == "__main__":
    print("\n".join(str(port) for port in reserve_ports(int(sys.argv[1]) if len(sys.argv) > 1 else 1)))
