#!/usr/bin/env python3
"""Fails when a file in src/ includes a header of a folder on a higher floor.

    check_layers.py SRC_DIR

The floors are listed once, bottom up, in SRC_DIR/layers.txt. Every folder of
SRC_DIR holding C++ files must be listed there; an include "folder/..." is
allowed from a file whose own folder is on the same floor or above. Prints the
arrows between folders it found (how many includes each) and exits 1 naming
every include that points up.
"""
import collections
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def read_floors(src):
    floors = []
    for line in (src / "layers.txt").read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            floors.append(name)
    return {name: level for level, name in enumerate(floors)}


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = pathlib.Path(argv[1])
    floor = read_floors(src)
    problems, arrows, files = [], collections.Counter(), 0
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".h", ".cc") or not path.is_file():
            continue
        relative = path.relative_to(src)
        if len(relative.parts) < 2:
            continue  # files at the top of src/ (none today) have no floor
        files += 1
        own = relative.parts[0]
        if own not in floor:
            problems.append(f"{relative}: folder {own}/ is not in {src / 'layers.txt'}; add it on its floor")
            continue
        for target in INCLUDE.findall(path.read_text(errors="replace")):
            parts = target.split("/")
            if len(parts) < 2 or parts[0] == "accel" or parts[0] == own:
                continue
            if parts[0] not in floor:
                continue  # generated or third-party headers (tb_event.pb.h, gloo/...)
            arrows[(own, parts[0])] += 1
            if floor[parts[0]] > floor[own]:
                problems.append(f"{relative}: includes \"{target}\", but {parts[0]}/ is above {own}/ in layers.txt")
    for (own, target), count in sorted(arrows.items(), key=lambda a: (floor[a[0][0]], floor[a[0][1]])):
        print(f"{own} -> {target}: {count}")
    upward = sum(1 for p in problems if "is above" in p)
    print(f"{files} files, {len(arrows)} arrows between folders, {upward} pointing up")
    for problem in problems:
        print("FAIL: " + problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
