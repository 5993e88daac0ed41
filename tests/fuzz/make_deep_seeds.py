#!/usr/bin/env python3
"""Writes seed inputs that nest 100,000 levels deep for a fuzz target.

Generated at build time rather than committed: each is a few hundred KB.
Usage: make_deep_seeds.py KIND OUTDIR, KIND one of json, safetensors, yaml, capi.
"""
import os
import struct
import sys

DEPTH = 100_000


def arrays(depth=DEPTH):
    return "[" * depth + "]" * depth


def objects(depth=DEPTH):
    return '{"a":' * depth + "1" + "}" * depth


def seeds(kind):
    if kind == "json":
        yield "deep_arrays", arrays()
        yield "deep_objects", objects()
        yield "deep_unclosed", "[" * DEPTH
        yield "deep_mixed", '[{"k":' * (DEPTH // 2) + "null" + "}]" * (DEPTH // 2)
        yield "at_limit", arrays(256)
        yield "over_limit", arrays(257)
    elif kind == "safetensors":
        header = '{"w":{"dtype":"F32","shape":[%s],"data_offsets":[0,0]}}' % arrays()
        yield "deep_shape", struct.pack("<Q", len(header)).decode("latin-1") + header
        header = '{"__metadata__":{"m":%s}}' % objects()
        yield "deep_metadata", struct.pack("<Q", len(header)).decode("latin-1") + header
    elif kind == "yaml":
        yield "deep_flow_sequence", arrays()
        # yaml-cpp takes about a second per 100,000 levels (it stops parsing at
        # 499 but scans on), so one seed at full depth and the others shallower.
        yield "deep_flow_mapping", "{a: " * 5000 + "1" + "}" * 5000
        yield "deep_value", "num_processes: " + arrays(5000) + "\n"
        yield "deep_block", "".join(" " * i + "k:\n" for i in range(700))
        yield "accelerate_config", ("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_CPU\n"
                                    "mixed_precision: 'no'\nnum_machines: 1\nnum_processes: 2\nuse_cpu: true\n"
                                    "gpu_ids: all\ndeepspeed_config: {}\ntpu_env: []\n")
    elif kind == "capi":
        # First byte picks the entry point (see fuzz_c_json_inputs.cpp).
        yield "spec_deep", "m" + arrays()
        yield "spec_deep_argument", 'm[{"type": "Linear", "in_features": %s, "out_features": 2}]' % arrays(200)
        yield "spec_ok", 'm[{"type": "Linear", "in_features": 3, "out_features": 2}, {"type": "ReLU"}]'
        yield "config_deep", 't{"lr": %s}' % arrays()
        yield "config_ok", 't{"lr": 0.1, "name": "x", "flag": true}'
    else:
        raise SystemExit("unknown kind " + kind)


def main():
    kind, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    for name, text in seeds(kind):
        with open(os.path.join(outdir, name), "wb") as out:
            out.write(text.encode("latin-1"))


if __name__ == "__main__":
    main()
