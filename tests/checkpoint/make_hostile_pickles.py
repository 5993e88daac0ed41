#!/usr/bin/env python3
"""Writes the hostile-pickle corpus of issue 43: pickles that misuse opcodes,
stop short, nest a million deep, declare huge lengths, view past their storage
or ask for allocations by argument.

Usage: make_hostile_pickles.py OUTDIR
  OUTDIR/archives/<case>.pt  each pickle as torch.save writes it (a zip archive
                             holding data.pkl beside two storages, "0": 8 float32
                             and "1": 3 bytes), for load_state to read in place of
                             optimizer.bin, scheduler.bin, random_states_0.pkl and
                             custom_checkpoint_0.pkl
                             (tests/capi/hostile_checkpoint_corpus.cpp)
  OUTDIR/seeds/<case>        the same data.pkl as a seed of fuzz_torch_pickle
                             (its first byte picks the vocabulary: 0, a state dict)

Generated at build time rather than committed: the deep ones are 1-2 MB each.
Only the standard library: the bytes are written opcode by opcode, so that
every case is exactly the misuse it names.
"""
import io
import os
import struct
import sys
import zipfile

PROTO = b"\x80\x02"
STOP = b"."


def text(s):
    """BINUNICODE."""
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def integer(n):
    """BININT for 32-bit values, LONG1 beyond."""
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    data = n.to_bytes(8, "little", signed=True)
    return b"\x8a\x08" + data


def global_(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def tuple_(*items):
    return b"(" + b"".join(items) + b"t"


def storage(key="0", kind="FloatStorage", numel=8):
    """The persistent id of a storage record, loaded (BINPERSID)."""
    return tuple_(text("storage"), global_("torch", kind), text(key), text("cpu"), integer(numel)) + b"Q"


def tensor(offset, sizes, strides, store=None):
    """torch._utils._rebuild_tensor_v2(storage, offset, sizes, strides, False, OrderedDict())."""
    store = store if store is not None else storage()
    return (global_("torch._utils", "_rebuild_tensor_v2") +
            tuple_(store, integer(offset), tuple_(*map(integer, sizes)), tuple_(*map(integer, strides)),
                   b"\x89", global_("collections", "OrderedDict") + b")R") + b"R")


def state_dict(value):
    """{"state": {0: {"momentum_buffer": value}}, "param_groups": []}: where an optimizer's tensors sit."""
    return (b"}" + text("state") + b"}" + integer(0) + b"}" + text("momentum_buffer") + value + b"s" + b"s" +
            b"s" + text("param_groups") + b"]" + b"s")


VALID = PROTO + state_dict(tensor(0, [2, 4], [4, 1])) + STOP
DEEP = 1_000_000


def cases():
    # Opcodes that take from an empty stack or the wrong items: LibTorch 1.13's
    # unpickler crashed on these (SIGSEGV, "free(): invalid pointer").
    yield "reduce_on_empty_stack", PROTO + b"R" + STOP
    yield "reduce_with_one_item", PROTO + b")R" + STOP
    yield "build_on_empty_stack", PROTO + b"b" + STOP
    yield "build_on_a_number", PROTO + b"K\x01}b" + STOP
    yield "binpersid_with_nothing", PROTO + b"Q" + STOP
    yield "binpersid_of_a_number", PROTO + b"K\x01Q" + STOP
    yield "tuple2_with_one_item", PROTO + b"K\x01\x86" + STOP
    yield "tuple3_with_nothing", PROTO + b"\x87" + STOP
    yield "setitems_without_mark", PROTO + b"}K\x01K\x02u" + STOP
    yield "setitem_on_a_list", PROTO + b"]K\x01K\x02s" + STOP
    yield "append_to_a_number", PROTO + b"K\x01K\x02a" + STOP
    yield "pop_mark_never_set", PROTO + b"1" + STOP
    yield "memo_get_never_put", PROTO + b"h\x05" + STOP
    yield "unknown_opcode", PROTO + b"\xff" + STOP
    yield "protocol_6", b"\x80\x06N" + STOP
    yield "no_stop", PROTO + b"N"
    yield "two_values_at_stop", PROTO + b"NN" + STOP
    yield "dict_key_a_list", PROTO + b"}]K\x01s" + STOP
    yield "list_appended_to_itself", PROTO + b"]q\x00h\x00a" + STOP
    yield "list_changed_after_placing", PROTO + b"]q\x00]h\x00a0h\x00K\x01a" + STOP
    yield "list_builder_on_a_number", PROTO + global_("torch.jit._pickle", "build_intlist") + b"K\x01\x85R" + STOP
    yield "type_tag_without_type", PROTO + global_("torch.jit._pickle", "restore_type_tag") + b"N\x85R" + STOP
    # Globals that are code, or constructors that allocate by their argument.
    yield "global_os_system", PROTO + global_("os", "system") + text("touch pwned") + b"\x85R" + STOP
    yield "bytearray_of_4gib", PROTO + global_("builtins", "bytearray") + integer(2**32) + b"\x85R" + STOP
    yield "storage_type_not_a_storage", PROTO + tuple_(text("storage"), global_("os", "getcwd"), text("0"),
                                                       text("cpu"), integer(8)) + b"Q" + STOP
    # Storages that do not match their records.
    yield "storage_without_record", PROTO + state_dict(tensor(0, [1], [1], storage(key="7"))) + STOP
    yield "storage_numel_wrong", PROTO + state_dict(tensor(0, [1], [1], storage(numel=9))) + STOP
    yield "storage_key_with_slash", PROTO + state_dict(tensor(0, [1], [1], storage(key="../0"))) + STOP
    yield "storage_named_twice_as_two_types", PROTO + state_dict(
        tuple_(tensor(0, [1], [1]), tensor(0, [1], [1], storage(kind="DoubleStorage", numel=4)))) + STOP
    # Views larger than their storage (8 float32, 32 bytes): a heap read, or a crash.
    yield "view_one_past_the_end", PROTO + state_dict(tensor(0, [9], [1])) + STOP
    yield "view_at_the_end_offset", PROTO + state_dict(tensor(8, [1], [1])) + STOP
    yield "view_negative_offset", PROTO + state_dict(tensor(-1, [1], [1])) + STOP
    yield "view_stride_2_40", PROTO + state_dict(tensor(0, [2], [2**40])) + STOP
    yield "view_stride_overflows", PROTO + state_dict(tensor(0, [3], [2**62])) + STOP
    yield "view_offset_overflows", PROTO + state_dict(tensor(2**62, [2], [2**62])) + STOP
    yield "view_size_overflows", PROTO + state_dict(tensor(0, [2**62, 4], [0, 0])) + STOP
    yield "view_broadcast_2_40_elements", PROTO + state_dict(tensor(0, [2**40], [0])) + STOP
    yield "view_of_bytes_past_end", PROTO + state_dict(tensor(0, [4], [1], storage("1", "ByteStorage", 3))) + STOP
    # Declared lengths far beyond the file: refused before allocating.
    yield "binunicode_4gib", PROTO + b"X" + struct.pack("<I", 2**32 - 1) + b"abc" + STOP
    yield "binbytes_4gib", b"\x80\x03B" + struct.pack("<I", 2**32 - 1) + b"abc" + STOP
    yield "binunicode8_2_63", b"\x80\x04\x8d" + struct.pack("<Q", 2**63) + b"abc" + STOP
    yield "binbytes8_max", b"\x80\x04\x8e" + struct.pack("<Q", 2**64 - 1) + b"abc" + STOP
    yield "frame_huge", b"\x80\x04\x95" + struct.pack("<Q", 2**63) + b"N" + STOP
    yield "long1_too_wide", PROTO + b"\x8a\x09" + b"\x01" * 9 + STOP
    # Nesting a million deep: overflowed the stack when destroyed. (deep_lists
    # stacks its million lists first: refused by the stack's bound, the others
    # by the depth's.)
    yield "deep_lists", PROTO + b"]" * DEEP + b"a" * (DEEP - 1) + STOP
    yield "deep_tuples", PROTO + b"N" + b"\x85" * DEEP + STOP
    yield "deep_dicts", PROTO + b"}" + b"K\x00}" * (DEEP // 4) + b"s" * (DEEP // 4) + STOP
    yield "deep_raw_tuples", PROTO + global_("collections", "OrderedDict") + b"\x85" * DEEP + STOP
    yield "deep_marks", PROTO + b"(" * DEEP + b"t" * DEEP + STOP
    yield "many_stack_items", PROTO + b"N" * (2**18 + 2) + STOP
    # Sharing one tuple into itself doubles the tree per step.
    yield "shared_tuple_bomb", PROTO + b"N" + b"2\x86" * 64 + STOP
    # A valid pickle, cut short at several points.
    for fraction in (1, 2, 3, 5, 7):
        cut = len(VALID) * fraction // 8
        yield f"truncated_at_{fraction}_8", VALID[:cut]
    # Valid pickles of the wrong shape for every target.
    yield "a_number", PROTO + b"K\x01" + STOP
    yield "an_empty_dict", PROTO + b"}" + STOP


def archive(data_pkl):
    """A torch.save zip archive: stored records under one folder, as torch's writer makes them."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", data_pkl)
        z.writestr("archive/data/0", struct.pack("<8f", *range(1, 9)))
        z.writestr("archive/data/1", b"abc")
        z.writestr("archive/byteorder", b"little")
        z.writestr("archive/version", b"3\n")
    return out.getvalue()


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "archives"), exist_ok=True)
    os.makedirs(os.path.join(out, "seeds"), exist_ok=True)
    for name, data in cases():
        whole = archive(data)
        with open(os.path.join(out, "archives", name + ".pt"), "wb") as f:
            f.write(whole)
        with open(os.path.join(out, "seeds", name), "wb") as f:
            f.write(b"\x00" + data)
    # Archives damaged as zips: cut short, and a record stored compressed.
    whole = archive(VALID)
    for name, data in (("zip_truncated", whole[: len(whole) // 2]), ("zip_without_end", whole[:-22])):
        with open(os.path.join(out, "archives", name + ".pt"), "wb") as f:
            f.write(data)
    deflated = io.BytesIO()
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", PROTO + text("a" * 1_000_000) + STOP)
        z.writestr("archive/version", b"3\n")
    with open(os.path.join(out, "archives", "zip_deflated_record.pt"), "wb") as f:
        f.write(deflated.getvalue())


if __name__ == "__main__":
    main()
