#!/usr/bin/env python3
"""The layers the build enforces, checked from the sources alone.

    check_layers.py REPO_ROOT

1. Every `#include "..."` under src/ stays inside what its layer may use,
   as cmake/layers.cmake declares it (the build enforces the same thing by
   giving each layer an include root of its own: this check names the
   file and line, and also covers headers no .c includes).
2. No source file under src/ or tools/ is over 1,000 lines, and no
   function over 150.
3. The check itself can fail: a wrong-way include planted in a copy of
   the tree (ops, the op layer, reaching up into the runtime) is found.
"""
import fnmatch, os, re, shutil, sys, tempfile

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 150


def parse_layers(root):
    text = open(os.path.join(root, "cmake", "layers.cmake")).read()
    text = re.sub(r"#[^\n]*", "", text)
    variables = {}
    for name, body in re.findall(r"set\((\w+)\s+([^)]*)\)", text):
        variables[name] = body.split()
    layers = []
    for body in re.findall(r"seam_layer\(([^)]*)\)", text):
        words = []
        for w in body.split():
            m = re.fullmatch(r"\$\{(\w+)\}", w)
            words += variables[m.group(1)] if m else [w]
        name, rest = words[0], words[1:]
        sources = rest[rest.index("SOURCES") + 1:rest.index("USES")]
        uses = rest[rest.index("USES") + 1:]
        layers.append((name, sources, uses))
    if not layers:
        sys.exit("check_layers: no seam_layer() in cmake/layers.cmake")
    # plug-ins: their own folder and include/ alone
    for folder in variables.get("SEAM_PLUGIN_FOLDERS", []):
        layers.append((os.path.basename(folder) + " (plug-in)", [folder + "/*.c"], []))
    return layers


def layer_of(rel, layers):
    """The layer a file under src/ belongs to: the one whose SOURCES glob
    matches it (a header: the glob's folder is the header's folder)."""
    folder = os.path.dirname(rel)
    for name, sources, uses in layers:
        for g in sources:
            # fnmatch's * would cross folders: the folder must be the glob's
            if os.path.dirname(g) == folder and (rel.endswith((".h", ".cu")) or fnmatch.fnmatch(os.path.basename(rel),
                                                                                      os.path.basename(g))):
                return name, uses
    return None, None


def check_includes(root, layers):
    bad = []
    src = os.path.join(root, "src")
    for dirpath, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h", ".cu")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, src)
            name, uses = layer_of(rel, layers)
            if name is None:
                bad.append(f"src/{rel}: in no layer of cmake/layers.cmake")
                continue
            for no, line in enumerate(open(path, errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if "/" not in inc:
                    if os.path.exists(os.path.join(dirpath, inc)) or os.path.exists(os.path.join(root, "include", inc)):
                        continue
                    bad.append(f"src/{rel}:{no}: #include \"{inc}\": no such file beside it or in include/")
                    continue
                if any(inc == u or inc.startswith(u.rstrip("/") + "/") for u in uses):
                    continue
                owner, _ = layer_of(inc, layers)
                bad.append(f"src/{rel}:{no}: layer {name} includes \"{inc}\" (layer {owner or '?'}), "
                           f"which it may not use (it may use: {' '.join(uses)})")
    return bad


def check_sizes(root):
    bad = []
    for top in ("src", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                lines = open(path, errors="replace").read().split("\n")
                if len(lines) - 1 > MAX_FILE_LINES:
                    bad.append(f"{rel}: {len(lines) - 1} lines (at most {MAX_FILE_LINES})")
                start = None
                for no, line in enumerate(lines, 1):
                    if start is None and re.match(r"[A-Za-z_].*\(", line) and not line.rstrip().endswith(";") \
                            and not line.startswith(("typedef", "#")):
                        start, head = no, line.strip()
                    elif start is not None and line.startswith("}"):
                        n = no - start + 1
                        if n > MAX_FUNCTION_LINES and not head.endswith("= {") and "[] = {" not in head:
                            bad.append(f"{rel}:{start}: {head[:70]} is {n} lines (at most {MAX_FUNCTION_LINES})")
                        start = None
    return bad


def planted_fails(root, layers):
    """A wrong-way include in a copy of src/ must be found."""
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(root, "src"), os.path.join(tmp, "src"))
        shutil.copytree(os.path.join(root, "cmake"), os.path.join(tmp, "cmake"))
        os.symlink(os.path.join(root, "include"), os.path.join(tmp, "include"))
        victim = os.path.join(tmp, "src", "ops", "attr.c")
        text = open(victim).read()
        open(victim, "w").write(text.replace("#include", '#include "runtime/exec.h"\n#include', 1))
        found = check_includes(tmp, layers)
        return any("src/ops/attr.c" in b and "runtime/exec.h" in b for b in found)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    layers = parse_layers(root)
    bad = check_includes(root, layers) + check_sizes(root)
    if not planted_fails(root, layers):
        bad.append("check_layers: a wrong-way include planted in src/ops/attr.c was not found (the check is broken)")
    for b in bad:
        print(b)
    if bad:
        print(f"check_layers: {len(bad)} problem(s)")
        return 1
    print(f"check_layers: {len(layers)} layers ({', '.join(n for n, _, _ in layers)}): every include runs "
          f"downwards; no file over {MAX_FILE_LINES} lines, no function over {MAX_FUNCTION_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
